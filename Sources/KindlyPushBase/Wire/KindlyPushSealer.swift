package import KindlyPushCore

/// The backend side of wire format v1: seals a message for one device (section 2) and
/// writes the APNs payload (section 3).
public enum KindlyPushSealer {
    /// Visible pushes carry a placeholder alert and `mutable-content: 1`; silent pushes only
    /// `content-available: 1`.
    public enum Mode: String, Sendable, CaseIterable {
        /// An alert with the placeholder and `mutable-content: 1`, for devices that decrypt before display.
        case visible
        /// Only `content-available: 1`, for every other device.
        case silent
    }

    /// The generic alert of a visible push. It never contains message text.
    public struct Placeholder: Sendable, Hashable, Codable {
        /// The alert's title.
        public var title: String
        /// The alert's text.
        public var body: String
        /// `aps.thread-id`: the notifications of one thread (a chat) are grouped on the device
        /// (wire-format section 9.2). `seal --recipients-inline` sets it from a line's
        /// `"thread_id"`; not part of the coded form.
        package var threadID: String?

        private enum CodingKeys: String, CodingKey {
            case title, body
        }

        /// A placeholder alert; it must never contain message text.
        public init(title: String, body: String) {
            self.title = title
            self.body = body
        }

        /// "New message" / "Open the app to read it".
        public static let `default` = Placeholder(title: "New message", body: "Open the app to read it")
    }

    /// Why a push could not be sealed.
    public enum SealingError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The plaintext breaks docs/spec/wire-format.md section 4.
        case invalidPlaintext(String)
        /// The compact payload would exceed APNs' 4096-byte limit.
        case payloadTooLarge(size: Int)
        /// The recipient's public key is a low-order point (all-zero shared secret).
        case unusableRecipientKey
        /// A given ephemeral key or nonce has the wrong length.
        case invalidParameter(String)

        public var description: String {
            switch self {
            case .invalidPlaintext(let reason): return "the plaintext is not a Kindly message: \(reason)"
            case .payloadTooLarge(let size):
                return "the sealed payload would be \(size) bytes, over APNs' limit of \(WireFormat.maximumPayloadSize)"
            case .unusableRecipientKey: return "the device public key gives an all-zero shared secret"
            case .invalidParameter(let reason): return reason
            }
        }

        /// The error of a seal whose cryptography failed: a low-order device key gives the
        /// all-zero shared secret.
        package init(_ error: CryptoError) {
            switch error {
            case .allZeroSharedSecret: self = .unusableRecipientKey
            default: self = .invalidParameter(error.description)
            }
        }
    }

    /// Seals `payload` for `recipient` and returns the compact APNs JSON, at most 4096 bytes.
    public static func seal(
        _ payload: DecryptedPayload,
        for recipient: DevicePublicKey,
        mode: Mode = .visible,
        placeholder: Placeholder = .default
    ) throws(SealingError) -> [UInt8] {
        // The message in clear: zeroed once sealed.
        var message = JSONWriter.compactBytes(.object(payload.object))
        defer { message.wipeCapacity() }
        let envelope = try sealMessage(
            message, for: recipient, ephemeralSecretKey: SecureBytes.random(count: X25519.keyLength),
            nonce: Sodium.randomBytes(count: XChaCha20Poly1305.nonceLength))
        let document = apnsDocument(envelope, mode: mode, placeholder: placeholder)
        let bytes = JSONWriter.compactBytes(document)
        guard bytes.count <= WireFormat.maximumPayloadSize else { throw .payloadTooLarge(size: bytes.count) }
        return bytes
    }

    /// Seals a plaintext object read from JSON (the `seal` command's input).
    public static func seal(
        plaintext: JSONValue,
        for recipient: DevicePublicKey,
        mode: Mode = .visible,
        placeholder: Placeholder = .default
    ) throws(SealingError) -> [UInt8] {
        try seal(try payload(plaintext: plaintext), for: recipient, mode: mode, placeholder: placeholder)
    }

    /// The message of a plaintext object read from JSON, checked against docs/spec/wire-format.md section 4.
    ///
    /// - Throws: ``SealingError/invalidPlaintext(_:)`` with the rule it breaks.
    package static func payload(plaintext: JSONValue) throws(SealingError) -> DecryptedPayload {
        guard case .object(let object) = plaintext else {
            throw .invalidPlaintext("\(plaintext.typeName), not a JSON object")
        }
        do {
            return try DecryptedPayload(validating: object)
        } catch {
            throw .invalidPlaintext(error.description)
        }
    }

    /// Seals exactly the bytes `message` with a given ephemeral secret key and nonce: the
    /// deterministic core, for test vectors. Never reuse a nonce or ephemeral key in production.
    package static func sealMessage(
        _ message: [UInt8],
        for recipient: DevicePublicKey,
        ephemeralSecretKey: SecureBytes,
        nonce: [UInt8]
    ) throws(SealingError) -> SealedEnvelope {
        try sealMessage(message, for: recipient, sender: nil, ephemeralSecretKey: ephemeralSecretKey, nonce: nonce)
    }

    /// The APNs document for a sealed envelope: `aps` first, then `kindly`.
    package static func apnsDocument(_ envelope: SealedEnvelope, mode: Mode, placeholder: Placeholder = .default) -> JSONValue {
        let aps: JSONObject
        switch mode {
        case .visible:
            var members: [JSONObject.Member] = [
                .init(key: APNsKey.alert, value: [APNsKey.title: .string(placeholder.title), APNsKey.body: .string(placeholder.body)]),
                .init(key: APNsKey.mutableContent, value: 1),
                .init(key: APNsKey.sound, value: "default"),
            ]
            if let thread = placeholder.threadID { members.append(.init(key: APNsKey.threadID, value: .string(thread))) }
            aps = JSONObject(members)
        case .silent:
            aps = [APNsKey.contentAvailable: 1]
        }
        return .object(
            JSONObject([
                .init(key: APNsKey.aps, value: .object(aps)),
                .init(key: KindlyKey.envelope, value: .object(JSONObject(envelope.members))),
            ]))
    }
}
