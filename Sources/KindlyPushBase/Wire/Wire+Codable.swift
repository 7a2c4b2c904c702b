// Codable and Hashable for the wire-format values, with the spec's field names (wire-format
// sections 1, 4 and 6), so that a payload, a failure or a key entry can be logged as JSON.

extension DecryptedPayload: Codable {
    /// Encodes the whole plaintext object of docs/spec/wire-format.md section 4 as it was sealed: `chat_id`,
    /// `title`, `body`, `message_id`, `sent_at` and every extra.
    public func encode(to encoder: any Encoder) throws {
        try object.encode(to: encoder)
    }

    /// Decodes a plaintext object and checks it against section 4.
    ///
    /// - Throws: `DecodingError.dataCorrupted` with the rule it breaks.
    public init(from decoder: any Decoder) throws {
        let object = try JSONObject(from: decoder)
        do {
            try self.init(validating: object)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.description))
        }
    }
}

extension DecryptionFailure.Reason: Codable {}

extension DecryptionFailure: Codable {
    enum CodingKeys: String, CodingKey {
        case code, message
        case keyringError = "keyring_error"
    }

    /// Encodes `{"code": CODE, "message": DETAIL}` as the `--jsonl` error objects of docs/spec/streams.md do,
    /// with `keyring_error` (the keyring's own message) for `key_unavailable`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(reason, forKey: .code)
        try container.encode(detail, forKey: .message)
        try container.encodeIfPresent(keyringError?.description, forKey: .keyringError)
    }

    /// Decodes `{"code", "message"}`; the keyring's typed error is not restored.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(try container.decode(Reason.self, forKey: .code), try container.decode(String.self, forKey: .message))
    }
}

extension KeyID: Codable {
    /// Encodes the id as base64url text, as the wire format writes it.
    public func encode(to encoder: any Encoder) throws {
        try Base64Text.encode(base64URL, to: encoder)
    }

    /// Decodes canonical base64 or base64url text of 8 bytes.
    public init(from decoder: any Decoder) throws {
        self = try Base64Text.decode(from: decoder, what: "a kid (8 bytes of base64)") { KeyID(base64: $0) }
    }
}

extension DevicePublicKey: Codable {
    /// Encodes the key as base64url text.
    public func encode(to encoder: any Encoder) throws {
        try Base64Text.encode(base64URL, to: encoder)
    }

    /// Decodes canonical base64 or base64url text of 32 bytes.
    public init(from decoder: any Decoder) throws {
        self = try Base64Text.decode(from: decoder, what: "a device public key") { try DevicePublicKey(base64: $0) }
    }
}

extension Registration.PushMode: Codable {}

extension Registration: Codable {
    enum CodingKeys: String, CodingKey {
        case token, platform
        case pushMode = "push_mode"
        case publicKey = "public_key"
        case kid
        case sdkVersion = "sdk_version"
    }

    /// Encodes the registration object of docs/spec/wire-format.md section 6 (``json``).
    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }

    /// Decodes a registration object; `kid`, when present, must be the public key's.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let publicKey = try container.decode(DevicePublicKey.self, forKey: .publicKey)
        if let kid = try container.decodeIfPresent(KeyID.self, forKey: .kid), kid != publicKey.kid {
            throw DecodingError.dataCorruptedError(forKey: .kid, in: container, debugDescription: "the kid is not the public key's")
        }
        self.init(
            token: try container.decodeIfPresent(String.self, forKey: .token),
            pushMode: try container.decode(PushMode.self, forKey: .pushMode), publicKey: publicKey,
            sdkVersion: try container.decode(String.self, forKey: .sdkVersion))
    }
}

extension KindlyPushSealer.Mode: Codable {}

extension SenderID: Codable {
    /// Encodes the id as base64url text, as the wire format writes `sid`.
    public func encode(to encoder: any Encoder) throws {
        try Base64Text.encode(base64URL, to: encoder)
    }

    /// Decodes canonical base64 or base64url text of 8 bytes.
    public init(from decoder: any Decoder) throws {
        self = try Base64Text.decode(from: decoder, what: "a sid (8 bytes of base64)") { SenderID(base64: $0) }
    }
}

extension SenderPublicKey: Codable {
    /// Encodes the key as base64url text.
    public func encode(to encoder: any Encoder) throws {
        try Base64Text.encode(base64URL, to: encoder)
    }

    /// Decodes canonical base64 or base64url text of 32 bytes.
    public init(from decoder: any Decoder) throws {
        self = try Base64Text.decode(from: decoder, what: "a sender public key") { try SenderPublicKey(base64: $0) }
    }
}

extension PinnedSender: Codable {
    enum CodingKeys: String, CodingKey {
        case sid
        case publicKey = "public_key"
        case label, created
    }

    /// Encodes `{"sid", "public_key", "label", "created"}`, the object `kindly-push senders list`
    /// prints for each pinned key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sid, forKey: .sid)
        try container.encode(publicKey, forKey: .publicKey)
        try container.encode(label, forKey: .label)
        try container.encode(created, forKey: .created)
    }

    /// Decodes that object; `sid`, when present, must be the public key's.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let publicKey = try container.decode(SenderPublicKey.self, forKey: .publicKey)
        if let sid = try container.decodeIfPresent(SenderID.self, forKey: .sid), sid != publicKey.sid {
            throw DecodingError.dataCorruptedError(forKey: .sid, in: container, debugDescription: "the sid is not the public key's")
        }
        self.init(
            publicKey: publicKey, label: try container.decode(String.self, forKey: .label),
            created: try container.decode(Int64.self, forKey: .created))
    }
}

/// The one way the wire format's binary values (ids, public keys) are JSON: a single base64url
/// string, decoded from canonical base64 or base64url.
enum Base64Text {
    static func encode(_ text: String, to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }

    /// The value `make` reads from the text; `make` returning nil or throwing is a
    /// `dataCorrupted` error that says what was expected (and why, when `make` threw).
    static func decode<Value>(from decoder: any Decoder, what: String, _ make: (String) throws -> Value?) throws -> Value {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        let value: Value?
        do {
            value = try make(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not \(what): \(error)")
        }
        guard let value else { throw DecodingError.dataCorruptedError(in: container, debugDescription: "not \(what)") }
        return value
    }
}
