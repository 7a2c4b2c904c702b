import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import KindlyPushVectors
import Testing

/// What the library shows or delivers, compared byte for byte with the envelope's ciphertext:
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

    /// Twelve bytes, held without an allocation of their own (a set of thousands per vector).
    struct Window: Hashable {
        let head: UInt64
        let tail: UInt32
        let count: Int
    }

    /// The windows of `ct` a shown text must not hold: every 12 bytes of its base64url text, and
    /// every 12 bytes of the ciphertext it decodes to (as raw bytes in the UTF-8 of the text).
    static func windows(of ct: String) -> Set<Window> {
        let raw = (try? Base64.decode(ct)) ?? []
        return Set(windows(of: Array(ct.utf8)) + windows(of: raw))
    }

    /// Every run of 12 bytes in `bytes` (all of it when shorter).
    static func windows(of bytes: [UInt8]) -> [Window] {
        func window(_ slice: ArraySlice<UInt8>) -> Window {
            var head: UInt64 = 0
            var tail: UInt32 = 0
            for (index, byte) in slice.enumerated() {
                if index < 8 { head |= UInt64(byte) << (8 * UInt64(index)) } else { tail |= UInt32(byte) << (8 * UInt32(index - 8)) }
            }
            return Window(head: head, tail: tail, count: slice.count)
        }
        guard bytes.count > 12 else { return bytes.isEmpty ? [] : [window(bytes[...])] }
        return (0...(bytes.count - 12)).map { window(bytes[$0..<($0 + 12)]) }
    }

    static func shows(_ shown: [String], anyOf windows: Set<Window>) -> Bool {
        shown.contains { text in Self.windows(of: Array(text.utf8)).contains { windows.contains($0) } }
    }

    static func texts(_ content: NotificationContent) -> [String] { [content.title, content.subtitle, content.body] }

    @Test("no text the router, willPresent, the silent path or the extension shows holds the envelope's ct, on every vector")
    func ciphertextNeverShown() async throws {
        let vectors = try Self.sealedVectors()
        #expect(vectors.count >= 300)
        var versions = Set<Int>()
        for (vector, ct) in vectors {
            if let version = vector.apns["kindly"]?["v"]?.numberValue?.integerValue(in: 1...9) { versions.insert(Int(version)) }
            let windows = Self.windows(of: ct)
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

            #expect(!Self.shows(shown, anyOf: windows), "\(vector.description): \(shown)")
        }
        #expect(versions.isSuperset(of: [1, 2, 3]))
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
