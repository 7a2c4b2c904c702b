import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import Testing

@Suite("Routing real sealed pushes", .offThePool)
struct KindlyPushRouterTests {
    static let key = DeviceKey.generate()

    /// The object docs/spec/streams.md prescribes in "The output of route", written out by hand from the spec row.
    static func expectedJSON(_ combination: Combination, row: SpecRow) -> String {
        var text =
            #"{"kindly":true,"kind":"\#(combination.kind)","presentation":"\#(row.presentation)","#
            + #""presenter":"\#(row.presenter)","delegate_consulted":\#(Spec.delegateConsulted(combination))"#
        if row.presentation == .banner { text += #","chat_id":"c-1","title":"Anna","body":"Hi!""# }
        // The keyring without the key is the only failure here: `reason` whenever it does not decrypt.
        if !combination.decrypts { text += #","reason":"key_unavailable""# }
        return text + "}"
    }

    static func keyring(_ combination: Combination) -> InMemoryKeyring {
        InMemoryKeyring(keys: combination.decrypts ? [key] : [])
    }

    @Test("Every combination routes a real sealed push to exactly the spec's output object", arguments: Combination.all)
    func everyCombination(_ combination: Combination) throws {
        let row = try #require(Spec.row(for: combination))
        let push = try TestPushes.sealed(combination.kind, for: Self.key)
        #expect(PushKind(userInfo: push) == combination.kind)
        let context = RouteContext(
            appState: combination.appState, screen: combination.screen, hasExtension: combination.hasExtension,
            delegate: combination.delegate)
        let decision = KindlyPushRouter.route(
            userInfo: push, context: context, decryption: KindlyPushDecryption(keyring: Self.keyring(combination)))
        #expect(decision.json.compactText == Self.expectedJSON(combination, row: row), "row: \(row)")
    }

    @Test("A delegate object is asked exactly once where the spec consults it, and never elsewhere", arguments: Combination.all)
    func delegateObjectAskedOnce(_ combination: Combination) throws {
        let row = try #require(Spec.row(for: combination))
        let push = try TestPushes.sealed(combination.kind, for: Self.key)
        let delegate = CountingDelegate(answer: combination.delegate == .allow)
        let context = RouteContext(
            appState: combination.appState, screen: combination.screen, hasExtension: combination.hasExtension,
            delegate: delegate)
        let decision = KindlyPushRouter.route(
            userInfo: push, context: context, decryption: KindlyPushDecryption(keyring: Self.keyring(combination)))
        #expect(decision.json.compactText == Self.expectedJSON(combination, row: row))
        let asked = delegate.notifications
        #expect(asked.count == (Spec.delegateConsulted(combination) ? 1 : 0))
        if let notification = asked.first {
            #expect(notification == ExternalNotification(id: "c-1", title: "Anna", body: "Hi!", messageId: "m-1", userInfo: push))
        }
    }

    @Test("A push that is not Kindly's is passed through in every state, with no key look-up and no delegate", arguments: PushKind.allCases)
    func notKindly(_ kind: PushKind) {
        let push = TestPushes.foreign(kind)
        #expect(PushKind(userInfo: push) == kind)
        let keyring = InMemoryKeyring(keys: [Self.key])
        let delegate = CountingDelegate(answer: true)
        let expected = #"{"kindly":false,"kind":"\#(kind)","presentation":"passthrough","presenter":"system","delegate_consulted":false}"#
        for combination in Combination.all where combination.kind == kind && combination.decrypts {
            let context = RouteContext(
                appState: combination.appState, screen: combination.screen, hasExtension: combination.hasExtension,
                delegate: delegate)
            let decision = KindlyPushRouter.route(userInfo: push, context: context, decryption: KindlyPushDecryption(keyring: keyring))
            #expect(decision.json.compactText == expected)
            #expect(decision == .notKindly(kind: kind))
        }
        #expect(keyring.lookupCount == 0)
        #expect(delegate.notifications.isEmpty)
    }

    @Test("A push the extension decrypted is not decrypted again: chat id from kindly.chat_id, text from aps.alert")
    func preDecryptedIsNotDecryptedAgain() throws {
        let sealed = try TestPushes.sealed(.visible, for: Self.key)
        var applied = KindlyPushDecryption.apply(TestPushes.payload, toUserInfo: sealed)
        // A chat id that only kindly.chat_id holds proves where the router read it.
        applied = TestPushes.editing(applied, "kindly") { $0["chat_id"] = "c-from-envelope" }
        #expect(KindlyPushDecryption.isDecrypted(userInfo: applied))
        let keyring = InMemoryKeyring(keys: [Self.key])
        let delegate = CountingDelegate(answer: true)
        let decision = KindlyPushRouter.route(
            userInfo: applied, context: RouteContext(appState: .foreground, hasExtension: true, delegate: delegate),
            decryption: KindlyPushDecryption(keyring: keyring))
        #expect(keyring.lookupCount == 0)
        #expect(
            decision.json.compactText
                == #"{"kindly":true,"kind":"visible","presentation":"banner","presenter":"sdk","delegate_consulted":true,"chat_id":"c-from-envelope","title":"Anna","body":"Hi!"}"#
        )
        #expect(delegate.notifications.map(\.id) == ["c-from-envelope"])
        #expect(delegate.notifications.first?.userInfoJSON == applied)
    }

    @Test("A push marked decrypted counts as decrypting even with no key at all, and never carries a reason")
    func preDecryptedWithoutKeys() throws {
        let applied = KindlyPushDecryption.apply(TestPushes.payload, toUserInfo: try TestPushes.sealed(.visible, for: Self.key))
        let keyring = InMemoryKeyring()
        keyring.isLocked = true
        for appState in DisplayRules.AppState.allCases {
            let decision = KindlyPushRouter.route(
                userInfo: applied, context: RouteContext(appState: appState, hasExtension: true),
                decryption: KindlyPushDecryption(keyring: keyring))
            #expect(decision.reason == nil)
            #expect(decision.presentation == .banner)
            #expect(decision.chatId == "c-1")
        }
        #expect(keyring.lookupCount == 0)
    }

    @Test("The number 1 marks a push decrypted too; the string \"true\" does not")
    func decryptedMarkings() throws {
        let applied = KindlyPushDecryption.apply(TestPushes.payload, toUserInfo: try TestPushes.sealed(.visible, for: Self.key))
        let keyring = InMemoryKeyring()
        let decryption = KindlyPushDecryption(keyring: keyring)
        let context = RouteContext(appState: .foreground)
        let one = TestPushes.editing(applied, "kindly") { $0["decrypted"] = 1 }
        #expect(KindlyPushRouter.route(userInfo: one, context: context, decryption: decryption).presentation == .banner)
        let text = TestPushes.editing(applied, "kindly") { $0["decrypted"] = "true" }
        let decision = KindlyPushRouter.route(userInfo: text, context: context, decryption: decryption)
        #expect(decision.presentation == .placeholder)
        #expect(decision.reason == .keyUnavailable)
    }

    @Test("A push marked decrypted without a usable kindly.chat_id is not presented as a banner, and has no reason")
    func markedWithoutChat() throws {
        let applied = KindlyPushDecryption.apply(TestPushes.payload, toUserInfo: try TestPushes.sealed(.visible, for: Self.key))
        let keyring = InMemoryKeyring(keys: [Self.key])
        for chatId: JSONValue? in [nil, "", 7] {
            let push = TestPushes.editing(applied, "kindly") { $0["chat_id"] = chatId }
            #expect(KindlyPushRouter.resolve(userInfo: push, decryption: KindlyPushDecryption(keyring: keyring)) == .markedWithoutChat)
            let delegate = CountingDelegate(answer: true)
            let decision = KindlyPushRouter.route(
                userInfo: push, context: RouteContext(appState: .foreground, hasExtension: true, delegate: delegate),
                decryption: KindlyPushDecryption(keyring: keyring))
            #expect(
                decision.json.compactText
                    == #"{"kindly":true,"kind":"visible","presentation":"placeholder","presenter":"system","delegate_consulted":false}"#)
            #expect(delegate.notifications.isEmpty)
        }
        #expect(keyring.lookupCount == 0)
    }

    @Test("A locked keyring routes with reason key_unavailable and shows the placeholder")
    func lockedKeyring() throws {
        let keyring = InMemoryKeyring(keys: [Self.key])
        keyring.isLocked = true
        let delegate = CountingDelegate(answer: true)
        let decision = KindlyPushRouter.route(
            userInfo: try TestPushes.sealed(.visible, for: Self.key),
            context: RouteContext(appState: .foreground, hasExtension: true, delegate: delegate),
            decryption: KindlyPushDecryption(keyring: keyring))
        #expect(
            decision.json.compactText
                == #"{"kindly":true,"kind":"visible","presentation":"placeholder","presenter":"system","delegate_consulted":false,"reason":"key_unavailable"}"#
        )
        #expect(keyring.lookupCount == 1)
        #expect(delegate.notifications.isEmpty)
        keyring.isLocked = false
        let unlocked = KindlyPushRouter.route(
            userInfo: try TestPushes.sealed(.visible, for: Self.key),
            context: RouteContext(appState: .foreground, hasExtension: true, delegate: delegate),
            decryption: KindlyPushDecryption(keyring: keyring))
        #expect(unlocked.presentation == .banner)
        #expect(unlocked.reason == nil)
    }

    struct BrokenCase: Sendable, CustomStringConvertible {
        let description: String
        let push: JSONValue
        let reason: DecryptionFailure.Reason
    }

    static let brokenCases: [BrokenCase] = {
        let sealed = try! TestPushes.sealed(.visible, for: key)
        let alert: JSONValue = ["alert": ["title": "New message", "body": "Open the app to read it"], "mutable-content": 1]
        return [
            BrokenCase(description: "an empty kindly object", push: ["aps": alert, "kindly": [:]], reason: .unsupportedVersion),
            BrokenCase(description: "version 4", push: TestPushes.editing(sealed, "kindly") { $0["v"] = 4 }, reason: .unsupportedVersion),
            BrokenCase(description: "no ciphertext", push: TestPushes.editing(sealed, "kindly") { $0["ct"] = nil }, reason: .malformed),
            BrokenCase(
                description: "a ciphertext sealed for another key",
                push: TestPushes.editing(sealed, "kindly") { envelope in
                    let other = try! TestPushes.sealed(.visible, for: key).objectValue!["kindly"]!.objectValue!
                    envelope["ct"] = other["ct"]
                }, reason: .authenticationFailed),
        ]
    }()

    @Test("A broken Kindly push is still Kindly's: never passed through, its reason reported", arguments: brokenCases)
    func brokenPush(_ broken: BrokenCase) {
        let decision = KindlyPushRouter.route(
            userInfo: broken.push, context: RouteContext(appState: .foreground),
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key])))
        #expect(decision.isKindly)
        #expect(decision.presentation == .placeholder)
        #expect(decision.reason == broken.reason)
        #expect(decision.json.objectValue?["reason"] == .string(broken.reason.code))
    }

    @Test("Routing with one given key (as from a key file) decides like a keyring holding it")
    func oneKey() throws {
        let push = try TestPushes.sealed(.silent, for: Self.key)
        let context = RouteContext(appState: .background)
        let withKey = KindlyPushRouter.route(userInfo: push, context: context) {
            KindlyPushDecryption.decryptResult(userInfo: $0, using: Self.key)
        }
        #expect(
            withKey
                == KindlyPushRouter.route(
                    userInfo: push, context: context, decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [Self.key]))))
        #expect(withKey.presentation == .banner)
        let otherKey = DeviceKey.generate()
        let without = KindlyPushRouter.route(userInfo: push, context: context) {
            KindlyPushDecryption.decryptResult(userInfo: $0, using: otherKey)
        }
        #expect(
            without.json.compactText
                == #"{"kindly":true,"kind":"silent","presentation":"none","presenter":"none","delegate_consulted":false,"reason":"key_unavailable"}"#
        )
        // Never called for a push marked decrypted, nor for another provider's.
        let applied = KindlyPushDecryption.apply(TestPushes.payload, toUserInfo: push)
        for userInfo in [applied, TestPushes.foreign(.silent)] {
            _ = KindlyPushRouter.route(userInfo: userInfo, context: context) { _ in
                Issue.record("decrypt was called")
                return .failure(DecryptionFailure(.malformed, "unexpected"))
            }
        }
    }

    @Test("The output object's members come in the order streams.md gives")
    func memberOrder() throws {
        let decision = RouteDecision(
            isKindly: true, kind: .silent, presentation: .banner, presenter: .sdk, delegateConsulted: true, chatId: "c",
            title: "t", body: "b")
        #expect(
            decision.json.objectValue?.keys == [
                "kindly", "kind", "presentation", "presenter", "delegate_consulted", "chat_id", "title", "body",
            ])
        let failed = RouteDecision(
            isKindly: true, kind: .visible, presentation: .none, presenter: .none, delegateConsulted: false, reason: .malformed)
        #expect(failed.json.objectValue?.keys == ["kindly", "kind", "presentation", "presenter", "delegate_consulted", "reason"])
    }
}
