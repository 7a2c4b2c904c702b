import KindlyPush
import KindlyPushCore
import Testing

@Suite("The display-rule engine", .offThePool)
struct DisplayRulesTests {
    static let message = DisplayMessage(chatId: "c-1", title: "Anna", body: "Hi!", messageId: "m-1")

    static func input(_ combination: Combination, isKindly: Bool = true) -> DisplayInput {
        DisplayInput(
            isKindly: isKindly, kind: combination.kind, hasExtension: combination.hasExtension,
            appState: combination.appState, screen: combination.screen,
            decryption: combination.decrypts ? .decrypted(message) : .failed, delegate: combination.delegate)
    }

    @Test("The spec's tables give exactly one row for every combination of inputs")
    func tablesAreComplete() {
        #expect(Combination.all.count == 144)
        for combination in Combination.all {
            #expect(Spec.row(for: combination) != nil, "no single spec row for \(combination)")
        }
    }

    @Test("Every combination of a Kindly push's inputs is decided as the spec's table says", arguments: Combination.all)
    func kindlyCombination(_ combination: Combination) throws {
        let row = try #require(Spec.row(for: combination))
        let decision = DisplayRules.decide(Self.input(combination))
        #expect(decision.presentation == row.presentation, "row: \(row)")
        #expect(decision.presenter == row.presenter, "row: \(row)")
        #expect(decision.delegateConsulted == Spec.delegateConsulted(combination))
        #expect(DisplayRules.consultsDelegate(Self.input(combination)) == Spec.delegateConsulted(combination))
        // The decrypted text travels with a banner and only with one.
        #expect(decision.message == (row.presentation == .banner ? Self.message : nil))
    }

    @Test("A push that is not Kindly's is passed through to the system in every state", arguments: Combination.all)
    func notKindlyCombination(_ combination: Combination) {
        let decision = DisplayRules.decide(Self.input(combination, isKindly: false))
        #expect(decision == DisplayDecision(presentation: .passthrough, presenter: .system, delegateConsulted: false))
    }

    @Test("The delegate's answer never changes a decision where it is not consulted", arguments: Combination.all)
    func delegateIgnoredWhenNotConsulted(_ combination: Combination) {
        guard !Spec.delegateConsulted(combination) else { return }
        var allow = Self.input(combination)
        allow.delegate = .allow
        var suppress = allow
        suppress.delegate = .suppress
        #expect(DisplayRules.decide(allow) == DisplayRules.decide(suppress))
    }

    @Test("A failed decryption never consults the delegate and never yields a banner", arguments: Combination.all)
    func failureNeverBanner(_ combination: Combination) {
        guard !combination.decrypts else { return }
        let decision = DisplayRules.decide(Self.input(combination))
        #expect(!decision.delegateConsulted)
        #expect(decision.presentation != .banner)
        #expect(decision.message == nil)
    }

    @Test("The app process receives every kind in the foreground, only silent pushes in the background, nothing when killed")
    func appProcessReceives() {
        for kind in PushKind.allCases {
            for appState in DisplayRules.AppState.allCases {
                #expect(DisplayRules.appProcessReceives(kind: kind, appState: appState) == Spec.appProcessReceives(kind, appState))
            }
        }
    }
}
