import KindlyPush
import KindlyPushCore

// The tables of display-rules.md, copied row by row, so that tests check the code against the
// spec and never against the code itself. Where the spec says "either", the row has no
// condition; "killed or background" is one row for both states.

/// The "app state, screen" column.
enum SpecPlace: CustomStringConvertible {
    case killedOrBackground, killed, background, foregroundChat, foregroundOther

    func matches(_ appState: DisplayRules.AppState, _ screen: DisplayRules.Screen) -> Bool {
        switch self {
        case .killedOrBackground: return appState == .killed || appState == .background
        case .killed: return appState == .killed
        case .background: return appState == .background
        case .foregroundChat: return appState == .foreground && screen == .chat
        case .foregroundOther: return appState == .foreground && screen == .other
        }
    }

    var description: String {
        switch self {
        case .killedOrBackground: return "killed or background"
        case .killed: return "killed"
        case .background: return "background"
        case .foregroundChat: return "foreground, chat"
        case .foregroundOther: return "foreground, other"
        }
    }
}

/// One row: the conditions (`nil` is "either" / not a condition) and the outcome.
struct SpecRow: CustomStringConvertible {
    let place: SpecPlace
    let decrypts: Bool?
    let delegate: DisplayRules.DelegateAnswer?
    let presentation: DisplayRules.Presentation
    let presenter: DisplayRules.Presenter

    init(
        _ place: SpecPlace, decrypts: Bool?, delegate: DisplayRules.DelegateAnswer? = nil, _ presentation: DisplayRules.Presentation,
        _ presenter: DisplayRules.Presenter
    ) {
        self.place = place
        self.decrypts = decrypts
        self.delegate = delegate
        self.presentation = presentation
        self.presenter = presenter
    }

    func matches(_ combination: Combination) -> Bool {
        place.matches(combination.appState, combination.screen)
            && (decrypts == nil || decrypts == combination.decrypts)
            && (delegate == nil || delegate == combination.delegate)
    }

    var description: String {
        "\(place) | \(decrypts.map { $0 ? "yes" : "no" } ?? "either")\(delegate.map { ", delegate \($0)" } ?? "") | \(presentation) | \(presenter)"
    }
}

enum Spec {
    /// "Kindly's, `visible`, extension present".
    static let visibleWithExtension: [SpecRow] = [
        SpecRow(.killedOrBackground, decrypts: true, .banner, .extension),
        SpecRow(.killedOrBackground, decrypts: false, .placeholder, .system),
        SpecRow(.foregroundChat, decrypts: nil, .none, .none),
        SpecRow(.foregroundOther, decrypts: true, delegate: .allow, .banner, .sdk),
        SpecRow(.foregroundOther, decrypts: true, delegate: .suppress, .none, .none),
        SpecRow(.foregroundOther, decrypts: false, .placeholder, .system),
    ]

    /// "Kindly's, `visible` without an extension, or `plain` with or without one".
    static let alertWithoutExtension: [SpecRow] = [
        SpecRow(.killedOrBackground, decrypts: nil, .placeholder, .system),
        SpecRow(.foregroundChat, decrypts: nil, .none, .none),
        SpecRow(.foregroundOther, decrypts: true, delegate: .allow, .banner, .sdk),
        SpecRow(.foregroundOther, decrypts: true, delegate: .suppress, .none, .none),
        SpecRow(.foregroundOther, decrypts: false, .placeholder, .system),
    ]

    /// "Kindly's, `silent` (an extension never runs for it)".
    static let silent: [SpecRow] = [
        SpecRow(.killed, decrypts: nil, .none, .none),
        SpecRow(.background, decrypts: true, delegate: .allow, .banner, .sdk),
        SpecRow(.background, decrypts: true, delegate: .suppress, .none, .none),
        SpecRow(.background, decrypts: false, .none, .none),
        SpecRow(.foregroundChat, decrypts: nil, .none, .none),
        SpecRow(.foregroundOther, decrypts: true, delegate: .allow, .banner, .sdk),
        SpecRow(.foregroundOther, decrypts: true, delegate: .suppress, .none, .none),
        SpecRow(.foregroundOther, decrypts: false, .none, .none),
    ]

    /// The table that governs a Kindly push of `kind`.
    static func table(kind: PushKind, hasExtension: Bool) -> [SpecRow] {
        switch kind {
        case .visible: return hasExtension ? visibleWithExtension : alertWithoutExtension
        case .plain: return alertWithoutExtension
        case .silent: return silent
        }
    }

    /// "The app process receives a push in the foreground (every kind) and in the background
    /// (`silent` only); a killed app receives nothing."
    static func appProcessReceives(_ kind: PushKind, _ appState: DisplayRules.AppState) -> Bool {
        switch (appState, kind) {
        case (.foreground, _): return true
        case (.background, .silent): return true
        default: return false
        }
    }

    /// `delegate_consulted`: "asked exactly once for every Kindly push that the app process (not
    /// the extension) has in decrypted form, whatever the screen …; never asked when decryption
    /// failed, and never by the extension."
    static func delegateConsulted(_ combination: Combination) -> Bool {
        combination.decrypts && appProcessReceives(combination.kind, combination.appState)
    }

    /// The one row of the spec that governs `combination`; fails the test when there is not
    /// exactly one (the tables must be complete and must not overlap).
    static func row(for combination: Combination) -> SpecRow? {
        let rows = table(kind: combination.kind, hasExtension: combination.hasExtension).filter { $0.matches(combination) }
        return rows.count == 1 ? rows[0] : nil
    }
}

/// One combination of the inputs of display-rules.md.
struct Combination: Sendable, CustomStringConvertible {
    let kind: PushKind
    let hasExtension: Bool
    let appState: DisplayRules.AppState
    let screen: DisplayRules.Screen
    let decrypts: Bool
    let delegate: DisplayRules.DelegateAnswer

    /// Every combination: 3 kinds × extension yes/no × 3 app states × 2 screens × decrypts
    /// yes/no × 2 delegate answers = 144.
    static let all: [Combination] = PushKind.allCases.flatMap { kind in
        [false, true].flatMap { hasExtension in
            DisplayRules.AppState.allCases.flatMap { appState in
                DisplayRules.Screen.allCases.flatMap { screen in
                    [true, false].flatMap { decrypts in
                        DisplayRules.DelegateAnswer.allCases.map { delegate in
                            Combination(
                                kind: kind, hasExtension: hasExtension, appState: appState, screen: screen,
                                decrypts: decrypts, delegate: delegate)
                        }
                    }
                }
            }
        }
    }

    var description: String {
        "\(kind), \(hasExtension ? "extension" : "no extension"), \(appState), \(screen), "
            + "\(decrypts ? "decrypts" : "does not decrypt"), delegate \(delegate)"
    }
}
