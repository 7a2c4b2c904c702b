import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import Testing

/// Codable with the spec's field names, Hashable, LocalizedError, and typed causes.
@Suite("Values, errors and typed causes", .offThePool)
struct ValueTypesTests {
    static let key = DeviceKey.generate()

    static func json(_ value: some Encodable) throws -> JSONValue {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try JSONValue(parsing: encoder.encode(value))
    }

    @Test("DecryptedPayload encodes the whole plaintext with the spec's names, and decodes back")
    func payloadCodable() throws {
        let payload = try DecryptedPayload(
            chatId: "c-1", title: "Anna", body: "Hi!", messageId: "m-1", sentAt: 1_764_460_800, extras: ["lang": "de"])
        let encoded = try Self.json(payload)
        #expect(
            encoded == [
                "body": "Hi!", "chat_id": "c-1", "lang": "de", "message_id": "m-1", "sent_at": 1_764_460_800, "title": "Anna",
            ])
        let decoded = try JSONDecoder().decode(DecryptedPayload.self, from: JSONEncoder().encode(payload))
        #expect(decoded.chatId == "c-1")
        #expect(decoded.sentAt == 1_764_460_800)
        #expect(decoded.extras["lang"] == "de")
        // Decoding checks section 4.
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(DecryptedPayload.self, from: Data(#"{"chat_id":"","title":"a","body":"b"}"#.utf8))
        }
    }

    @Test("RouteDecision encodes exactly the object of streams.md's route output")
    func routeDecisionCodable() throws {
        let banner = RouteDecision(
            isKindly: true, kind: .visible, presentation: .banner, presenter: .sdk, delegateConsulted: true, chatId: "c-1",
            title: "Anna", body: "Hi!")
        let data = try JSONEncoder().encode(banner)
        // JSONEncoder chooses the member order; the members are docs/spec/streams.md's.
        #expect(try JSONValue(parsing: data).objectValue?.hasSameMembers(as: banner.json.objectValue!) == true)
        #expect(try JSONDecoder().decode(RouteDecision.self, from: data) == banner)
        let failed = RouteDecision(
            isKindly: true, kind: .visible, presentation: .placeholder, presenter: .system, delegateConsulted: false,
            reason: .keyUnavailable)
        #expect(try Self.json(failed)["reason"] == "key_unavailable")
        #expect(try Self.json(failed)["chat_id"] == nil)
        #expect(try JSONDecoder().decode(RouteDecision.self, from: JSONEncoder().encode(failed)) == failed)
    }

    @Test("display values, entries and registrations encode with the spec's names")
    func otherValues() throws {
        let message = DisplayMessage(chatId: "c-1", title: "t", body: "b", messageId: "m")
        #expect(try Self.json(message) == ["body": "b", "chat_id": "c-1", "message_id": "m", "title": "t"])
        let decision = DisplayDecision(presentation: .none, presenter: .none, delegateConsulted: true)
        #expect(try Self.json(decision) == ["delegate_consulted": true, "presentation": "none", "presenter": "none"])
        let entry = KeyringEntry(kid: Self.key.kid, publicKey: Self.key.publicKey, label: "phone", created: 7)
        #expect(
            try Self.json(entry) == [
                "created": 7, "kid": .string(Self.key.kid.base64URL), "label": "phone",
                "public_key": .string(Self.key.publicKey.base64URL),
            ])
        #expect(try JSONDecoder().decode(KeyringEntry.self, from: JSONEncoder().encode(entry)) == entry)
        let registration = Registration(token: "ab", pushMode: .alert, publicKey: Self.key.publicKey)
        #expect(
            try JSONValue(parsing: JSONEncoder().encode(registration)).objectValue?.hasSameMembers(as: registration.json.objectValue!)
                == true)
        #expect(try JSONDecoder().decode(Registration.self, from: JSONEncoder().encode(registration)) == registration)
        #expect(Set([DisplayRules.Screen.chat, .chat, .other]).count == 2)
    }

    @Test("a pinned sender encodes as 'senders list' prints it, decodes back, and refuses a sid of another key")
    func pinnedSenderCodable() throws {
        let sender = SenderKey.generate().publicKey
        let pinned = PinnedSender(publicKey: sender, label: "backend-2026", created: 1_764_460_800)
        #expect(
            try Self.json(pinned) == [
                "created": 1_764_460_800, "label": "backend-2026", "public_key": .string(sender.base64URL),
                "sid": .string(sender.sid.base64URL),
            ])
        let data = try JSONEncoder().encode(pinned)
        let decoded = try JSONDecoder().decode(PinnedSender.self, from: data)
        #expect(decoded == pinned)
        // Hashable: an equal value made apart hashes alike; another label is another entry.
        let relabelled = PinnedSender(publicKey: sender, label: "other", created: pinned.created)
        #expect(Set([pinned, decoded]).count == 1)
        #expect(Set([pinned, decoded, relabelled]).count == 2)
        let other = SenderKey.generate().publicKey
        let forged = #"{"sid":"\#(other.sid.base64URL)","public_key":"\#(sender.base64URL)","label":"x","created":1}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(PinnedSender.self, from: Data(forged.utf8)) }
        let short = #"{"public_key":"AAAA","label":"x","created":1}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(PinnedSender.self, from: Data(short.utf8)) }
        #expect(try JSONDecoder().decode([SenderID].self, from: JSONEncoder().encode([sender.sid])) == [sender.sid])
    }

    @Test("failures are Hashable: a Set of them counts distinct failures")
    func failuresInASet() {
        let a = DecryptionFailure(.malformed, "\"kid\" is missing")
        let b = DecryptionFailure(.malformed, "\"kid\" is missing")
        let c = DecryptionFailure(.keyUnavailable, "locked", keyringError: .locked("test"))
        #expect(Set([a, b, c]).count == 2)
        #expect(Set([a, b, c].map(\.reason)) == [.malformed, .keyUnavailable])
    }

    @Test("localizedDescription is the line the CLI prints, not 'The operation could not be completed'")
    func localizedDescriptions() throws {
        let failure = DecryptionFailure(.keyUnavailable, "no key with kid AAAAAAAAAAA is stored", keyringError: .notFound(Self.key.kid))
        #expect(failure.localizedDescription == "key_unavailable: no key with kid AAAAAAAAAAA is stored")
        let keyring: any Error = KeyringError.locked("collection login")
        #expect(keyring.localizedDescription == "the keyring is locked (collection login)")
        let json: any Error = try #require(readError())
        #expect(!json.localizedDescription.contains("could not be completed"))
        let sealing: any Error = KindlyPushSealer.SealingError.payloadTooLarge(size: 5000)
        #expect(sealing.localizedDescription.contains("5000 bytes"))
    }

    func readError() -> JSONReadError? {
        do {
            _ = try JSONValue(parsing: "{")
            return nil
        } catch {
            return error
        }
    }

    @Test("reasons are exactly the spec's, in check order; an unknown code is nil, not a case")
    func reasons() {
        #expect(
            DecryptionFailure.Reason.allCases.map(\.code) == [
                "not_kindly", "unsupported_version", "malformed", "key_unavailable", "untrusted_sender", "authentication_failed",
                "bad_plaintext",
            ])
        #expect(DecryptionFailure.Reason(code: "key_unavailable") == .keyUnavailable)
        #expect(DecryptionFailure.Reason(code: "future_reason") == nil)
    }

    @Test("key_unavailable carries the keyring's typed error: locked is transient, not found is not")
    func typedCauses() throws {
        let push = try TestPushes.sealed(.visible, for: Self.key)
        let keyring = ControllableKeyring(keys: [Self.key])
        let decryption = KindlyPushDecryption(keyring: keyring)
        keyring.failure = .locked("test collection")
        let locked = try #require(decryption.decryptResult(userInfo: push).failure)
        #expect(locked.reason == .keyUnavailable)
        #expect(locked.keyringError == .locked("test collection"))
        #expect(locked.keyringError?.isTransient == true)
        keyring.failure = .unreachable("no bus")
        #expect(decryption.decryptResult(userInfo: push).failure?.keyringError?.isTransient == true)
        keyring.failure = nil
        #expect(decryption.decrypt(userInfo: push) == TestPushes.payload)

        let empty = KindlyPushDecryption(keyring: InMemoryKeyring())
        let missing = try #require(empty.decryptResult(userInfo: push).failure)
        #expect(missing.keyringError == .notFound(Self.key.kid))
        #expect(missing.keyringError?.isTransient == false)
        // Every other reason has no keyring error.
        let malformed = try #require(empty.decryptResult(userInfo: ["kindly": ["v": 1]]).failure)
        #expect(malformed.reason == .malformed)
        #expect(malformed.keyringError == nil)
    }

    @Test("a key from its base64 secret decrypts; bad text is refused without quoting it")
    func keyFromMemory() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/key.json"
        try KeyFile.write(Self.key, to: path)
        let file = try JSONValue(parsing: Data(contentsOf: URL(fileURLWithPath: path)))
        let secretText = try #require(file["secret_key"]?.stringValue)
        let key = DeviceKey(secretKey: try DeviceSecretKey(base64: secretText))
        #expect(key.kid == Self.key.kid)
        let push = try TestPushes.sealed(.visible, for: Self.key)
        #expect(KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])).decrypt(userInfo: push) == TestPushes.payload)
        #expect(throws: KeyDecodingError.wrongLength("secret key")) { try DeviceSecretKey(base64: "AAAA") }
        do {
            _ = try DeviceSecretKey(base64: "not base64!" + secretText)
            Issue.record("accepted text that is not base64")
        } catch {
            #expect(error == .notBase64("secret key"))
            #expect(!error.description.contains(secretText))
        }
    }
}
