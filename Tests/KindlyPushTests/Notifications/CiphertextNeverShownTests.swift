import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import KindlyPushVectors
import Testing

/// What the library shows or delivers, compared byte for byte with the envelope's ciphertext
/// (``CiphertextExposure``, the Testing product's check):
/// the display rule's "ciphertext never shown" (display-rules.md), tested on every vector of
/// every wire version, and the failures a host meets (a locked keyring; `nil` for every reason).
@Suite("Ciphertext never shown; a locked keyring; nil for every reason", .offThePool)
struct CiphertextNeverShownTests {
    /// Every vector with a `kindly` object holding a `ct` string, with that text.
    static func sealedVectors() throws -> [(vector: TestVector, ct: String)] {
        try Resources.vectorFiles().flatMap { url in
            try TestVector.vectors(inFile: [UInt8](Data(contentsOf: url))).compactMap { vector in
                vector.apns["kindly"]?["ct"]?.stringValue.map { (vector, $0) }
            }
        }
    }

    static func texts(_ content: NotificationContent) -> [String] { [content.title, content.subtitle, content.body] }

    @Test("no text the router, willPresent, the silent path or the extension shows holds the envelope's ct, on every vector")
    func ciphertextNeverShown() async throws {
        let vectors = try Self.sealedVectors()
        #expect(vectors.count >= 300)
        var versions = Set<Int>()
        for (vector, ct) in vectors {
            if let version = vector.apns["kindly"]?["v"]?.numberValue?.integerValue(in: 1...9) { versions.insert(Int(version)) }
            let decryption = KindlyPushDecryption(
                keyring: InMemoryKeyring(keys: [vector.deviceKey], pinnedSenders: vector.pinnedSenderKeys))
            var shown: [String] = []

            for appState in [DisplayRules.AppState.foreground, .background] {
                let decision = KindlyPushRouter.route(
                    userInfo: vector.apns, context: RouteContext(appState: appState), decryption: decryption)
                shown += [decision.title, decision.body].compactMap { $0 }
            }
            let posted = Recorder<NotificationContent>()
            let handler = KindlyNotificationHandler(
                decryption: decryption, hasExtension: false, logger: .disabled, openChat: { _ in },
                postBanner: { posted.record($0) })
            handler.setAppState(.foreground)
            let presentation = handler.notificationWillPresent(NotificationContent(userInfo: vector.apns))
            shown += [presentation.decision.title, presentation.decision.body].compactMap { $0 }
            shown += presentation.postedBanner.map(Self.texts) ?? []
            handler.setAppState(.background)
            var silent = vector.apns
            if case .object(var document) = silent {
                document["aps"] = ["content-available": 1]
                silent = .object(document)
            }
            _ = handler.notificationReceived(silent)
            shown += posted.all.flatMap(Self.texts)

            let service = KindlyNotificationService(decryption: decryption, deadline: .seconds(30), logger: .disabled)
            let delivered = Recorder<NotificationContent>()
            service.didReceive(NotificationContent(userInfo: vector.apns)) { delivered.record($0) }
            await delivered.wait(forCount: 1, timeout: hangCap)
            shown += delivered.all.flatMap(Self.texts)

            #expect(!CiphertextExposure.exposes(shown, ciphertext: ct), "\(vector.description): \(shown)")
        }
        #expect(versions.isSuperset(of: [1, 2, 3]))
    }

    @Test("the check finds 12 bytes of ct in a row, as its text or as the bytes it decodes to, and not 11")
    func exposureCheck() {
        let ct = Base64.urlEncoded(Array("Hello, world! The chat's text".utf8))
        let text = Array(ct)
        #expect(CiphertextExposure.exposes(["Banner: " + String(text[3..<15]) + "…"], ciphertext: ct))
        #expect(!CiphertextExposure.exposes(["Banner: " + String(text[3..<14]) + "…"], ciphertext: ct))
        #expect(CiphertextExposure.exposes(["said: world! The ch"], ciphertext: ct))
        #expect(!CiphertextExposure.exposes(["said: orld! The c"], ciphertext: ct))
        #expect(!CiphertextExposure.exposes(["New message", "Open the app to read it"], ciphertext: ct))
        #expect(!CiphertextExposure.exposes(["anything"], ciphertextOf: ["aps": ["alert": "no envelope"]]))
    }

    @Test("the extension with a locked keyring delivers the backend's placeholder unchanged, once")
    func lockedKeyringInTheExtension() async throws {
        let key = DeviceKey.generate()
        let keyring = ControllableKeyring(keys: [key])
        keyring.failure = .locked("the collection is locked")
        let log = LogRecorder()
        let service = KindlyNotificationService(
            decryption: KindlyPushDecryption(keyring: keyring), deadline: .seconds(30), logger: log.logger)
        let original = NotificationContent(userInfo: try TestPushes.sealed(.visible, for: key))
        let delivered = Recorder<NotificationContent>()
        service.didReceive(original) { delivered.record($0) }
        await delivered.wait(forCount: 1, timeout: hangCap)
        #expect(delivered.all == [original])
        #expect(!KindlyPushDecryption.isDecrypted(userInfo: .object(original.userInfo)))
        #expect(log.messages.contains { $0.contains("did not decrypt (key_unavailable)") })
    }

    @Test("willPresent with a locked keyring presents the placeholder and posts nothing; the silent path shows nothing")
    func lockedKeyringInWillPresent() throws {
        let key = DeviceKey.generate()
        let keyring = ControllableKeyring(keys: [key])
        keyring.failure = .locked("the collection is locked")
        let posted = Recorder<NotificationContent>()
        let handler = KindlyNotificationHandler(
            decryption: KindlyPushDecryption(keyring: keyring), hasExtension: false, logger: .disabled, openChat: { _ in },
            postBanner: { posted.record($0) })
        handler.setAppState(.foreground)
        let presentation = handler.notificationWillPresent(NotificationContent(userInfo: try TestPushes.sealed(.visible, for: key)))
        #expect(presentation.decision.presentation == .placeholder)
        #expect(presentation.decision.reason == .keyUnavailable)
        #expect(presentation.options == .bannerAndSound)
        #expect(presentation.postedBanner == nil)
        handler.setAppState(.background)
        let silent = handler.notificationReceived(try TestPushes.sealed(.silent, for: key))
        #expect(silent?.presentation != .banner)
        #expect(posted.all.isEmpty)
        // Unlocked, the same push decrypts: the failure was the keyring's, not the push's.
        keyring.failure = nil
        handler.setAppState(.foreground)
        let unlocked = handler.notificationWillPresent(NotificationContent(userInfo: try TestPushes.sealed(.visible, for: key)))
        #expect(unlocked.postedBanner?.title == "Anna")
    }

    @Test("decrypt(userInfo:) is nil for every failing vector, whatever its reason; decryptResult names the reason")
    func nilForEveryReason() throws {
        var reasons = Set<DecryptionFailure.Reason>()
        for url in try Resources.vectorFiles() {
            for vector in try TestVector.vectors(inFile: [UInt8](Data(contentsOf: url))) {
                guard case .failure(let reason) = vector.expected else { continue }
                let decryption = KindlyPushDecryption(
                    keyring: InMemoryKeyring(keys: [vector.deviceKey], pinnedSenders: vector.pinnedSenderKeys))
                #expect(decryption.decrypt(userInfo: vector.apns) == nil, "\(vector.description)")
                #expect(decryption.decryptResult(userInfo: vector.apns).failure?.reason == reason, "\(vector.description)")
                reasons.insert(reason)
            }
        }
        #expect(reasons == Set(DecryptionFailure.Reason.allCases))
    }
}
