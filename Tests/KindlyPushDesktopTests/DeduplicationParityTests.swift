import KindlyPush
import KindlyPushDesktop
import Testing

/// How a push is sealed: each wire version and mode, with the reader that decrypts it (the pins
/// a version needs, none where pinning would refuse it).
enum WireSealing: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case one = "version 1"
    case two = "version 2"
    case threeBase = "version 3 mode_base"
    case threeAuth = "version 3 mode_auth"

    static let sender = SenderKey.generate()

    var testDescription: String { rawValue }

    func seal(_ payload: DecryptedPayload, for key: DeviceKey, placeholder: KindlyPushSealer.Placeholder) throws -> JSONValue {
        let bytes: [UInt8]
        switch self {
        case .one: bytes = try KindlyPushSealer.seal(payload, for: key.publicKey, wire: .one, placeholder: placeholder)
        case .two: bytes = try KindlyPushSealer.seal(payload, for: key.publicKey, wire: .two, from: Self.sender, placeholder: placeholder)
        case .threeBase: bytes = try KindlyPushSealer.seal(payload, for: key.publicKey, wire: .three, placeholder: placeholder)
        case .threeAuth:
            bytes = try KindlyPushSealer.seal(payload, for: key.publicKey, wire: .three, from: Self.sender, placeholder: placeholder)
        }
        return try JSONValue(parsing: String(decoding: bytes, as: UTF8.self))
    }

    /// The sender keys a reader pins to decrypt this sealing: the sender's for version 2 and mode_auth.
    var pins: [SenderPublicKey] { self == .two || self == .threeAuth ? [Self.sender.publicKey] : [] }
}

/// What a reader does with one delivery, for one case of the parity matrix.
enum DeliveryCase: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case decryptsWithMessageID = "decrypts, with message_id"
    case decryptsWithoutMessageID = "decrypts, without message_id"
    case forAnotherDevice = "sealed for another device"
    case tampered = "tampered"

    var testDescription: String { rawValue }
}

/// The same push delivered twice is shown once, whatever its wire version; a reseal is
/// the same message exactly when it names the same message id. Version 1's outcome is the
/// reference for every other version (0.3.0 showed version 3 twice: its identity was read from
/// `n`, which version 3 does not have).
@Suite("De-duplication: every wire version as version 1", .offThePool)
struct DeduplicationParityTests {
    struct Outcome: Equatable {
        var namespace: StoreClaim.Namespace?
        var second: ClaimResult
        var resealedSameIdentity: Bool
    }

    func outcome(_ sealing: WireSealing, _ delivery: DeliveryCase) throws -> Outcome {
        let key = DeviceKey.generate()
        let handler = KindlyNotificationHandler(
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]), pinnedSenderKeys: sealing.pins),
            hasExtension: true, openChat: { _ in })
        handler.setAppState(.background, chatOnScreen: nil)
        let messageID = delivery == .decryptsWithoutMessageID ? nil : "m-1"
        let payload = try DecryptedPayload(chatId: "c-1", title: "Anna", body: "Hi", messageId: messageID)
        let placeholder = KindlyPushSealer.Placeholder(title: "New", body: "Open")
        let recipient = delivery == .forAnotherDevice ? DeviceKey.generate() : key
        func push() throws -> JSONValue {
            let sealed = try sealing.seal(payload, for: recipient, placeholder: placeholder)
            return delivery == .tampered ? try flippingCiphertext(sealed) : sealed
        }
        let first = try push()
        let claim = StoreClaim(handler.devicePresentation(for: first), server: "bus/:1.1")
        let again = try #require(StoreClaim(handler.devicePresentation(for: first), server: "bus/:1.1"))
        let resealed = StoreClaim(handler.devicePresentation(for: try push()), server: "bus/:1.1")
        let store = InMemoryDeduplicator()
        #expect(try post(store, try #require(claim), id: 7).0 == .posted(7))
        return Outcome(
            namespace: claim?.namespace, second: try post(store, again, id: 8).0,
            resealedSameIdentity: resealed?.identity == claim?.identity)
    }

    @Test(
        "a delivery shown twice is one notification; a reseal is one exactly when it has the same message id",
        arguments: DeliveryCase.allCases)
    func parity(_ delivery: DeliveryCase) throws {
        let reference = try outcome(.one, delivery)
        #expect(reference.second == .duplicate)
        #expect(
            reference.namespace == (delivery == .decryptsWithMessageID || delivery == .decryptsWithoutMessageID ? .message : .placeholder))
        #expect(reference.resealedSameIdentity == (delivery == .decryptsWithMessageID))
        for sealing in WireSealing.allCases.dropFirst() {
            #expect(try outcome(sealing, delivery) == reference, "\(sealing.rawValue)")
        }
    }
}
