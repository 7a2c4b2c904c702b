import FuzzSupport
import KindlyPush
import KindlyPushCore

/// Wire-format sections 3 to 5, 7 and 8 written out again from the spec, on libsodium directly, as
/// the oracle the library's decryption is checked against. It shares only the JSON reader and the
/// base64 decoder with the library (each has a fuzz target of its own).
enum Reference {
    /// What decrypting a push should give.
    enum Outcome: Equatable {
        case payload(JSONObject)
        case failure(DecryptionFailure.Reason)
    }

    static let label = Array("kindly-push/v1".utf8)
    static let label2 = Array("kindly-push/v2".utf8)
    static let label3 = Array("kindly-push/v3".utf8)

    /// Sections 5 and 7.3, `decrypt(userInfo)` with the one device key `secretKey` at hand and
    /// the pinned sender public keys `pinned` (none: not in pinned mode).
    static func decrypt(
        _ document: JSONValue, secretKey: [UInt8], publicKey: [UInt8], kid: [UInt8], pinned: [[UInt8]] = []
    ) -> Outcome {
        // 1. not_kindly: no top-level `kindly` member whose value is an object.
        guard case .object(let top) = document,
            let envelope = top.members.lazy.filter({ same($0.key, "kindly") }).compactMap({ objectValue($0.value) }).first
        else { return .failure(.notKindly) }
        // Duplicate names at the top level or inside `kindly`: malformed, before `v` is read.
        if hasDuplicateNames(top) || hasDuplicateNames(envelope) { return .failure(.malformed) }
        // 2. unsupported_version: `v` must be a number equal to 1, 2 or 3.
        guard case .number(let versionNumber)? = member(envelope, "v"), let version = self.version(versionNumber.literal) else {
            return .failure(.unsupportedVersion)
        }
        if version == 3 { return decryptVersion3(envelope, secretKey: secretKey, publicKey: publicKey, kid: kid, pinned: pinned) }
        // 3. malformed: each field a string of canonical base64 with the right decoded length;
        // version 2 also has `sid`, version 1 ignores it.
        var fields: [[UInt8]] = []
        var rules: [(String, (Int) -> Bool)] = [
            ("kid", { $0 == 8 }), ("epk", { $0 == 32 }), ("n", { $0 == 24 }), ("ct", { $0 >= 16 + 64 && ($0 - 16) % 64 == 0 }),
        ]
        if version == 2 { rules.append(("sid", { $0 == 8 })) }
        for (name, isValidLength) in rules {
            guard case .string(let text)? = member(envelope, name), let bytes = try? Base64.decode(text), isValidLength(bytes.count) else {
                return .failure(.malformed)
            }
            fields.append(bytes)
        }
        let (pushKid, epk, nonce, ciphertext) = (fields[0], fields[1], fields[2], fields[3])
        // 4. key_unavailable: only one key is at hand.
        guard pushKid == kid else { return .failure(.keyUnavailable) }
        // 5. untrusted_sender: a version 2 push whose sid names no pinned key (compared as the
        // BLAKE2b-8 of the pinned bytes); a version 1 push in pinned mode.
        var senderKey: [UInt8]?
        if version == 2 {
            let sid = fields[4]
            guard let key = pinned.first(where: { RawSodium.blake2b($0, outputLength: 8) == sid }) else {
                return .failure(.untrustedSender)
            }
            senderKey = key
        } else if !pinned.isEmpty {
            return .failure(.untrustedSender)
        }
        // 6. authentication_failed: an all-zero shared secret, or the tag does not verify.
        guard let sharedSecret = RawSodium.scalarMult(secretKey, epk) else { return .failure(.authenticationFailed) }
        let key: [UInt8]
        let additionalData: [UInt8]
        if let senderKey {
            guard let senderSecret = RawSodium.scalarMult(secretKey, senderKey) else { return .failure(.authenticationFailed) }
            key = RawSodium.blake2b(label2 + sharedSecret + senderSecret + epk + publicKey + senderKey, outputLength: 32)
            additionalData = label2 + kid + fields[4]
        } else {
            key = RawSodium.blake2b(label + sharedSecret + epk + publicKey, outputLength: 32)
            additionalData = label + kid
        }
        guard let padded = RawSodium.open(ciphertext, additionalData: additionalData, nonce: nonce, key: key) else {
            return .failure(.authenticationFailed)
        }
        // 7. bad_plaintext: the padding, then section 4.
        guard let message = unpad(padded) else { return .failure(.badPlaintext) }
        return validate(message)
    }

    /// ISO/IEC 7816-4 padding to a multiple of 64 bytes: 0x80, then zeros; at least one byte.
    static func pad(_ message: [UInt8]) -> [UInt8] {
        var padded = message + [0x80]
        while padded.count % 64 != 0 { padded.append(0) }
        return padded
    }

    /// The message inside `padded`, or `nil` unless the last 64 bytes hold 0x80 then only zeros.
    static func unpad(_ padded: [UInt8]) -> [UInt8]? {
        guard !padded.isEmpty, padded.count % 64 == 0 else { return nil }
        var index = padded.count - 1
        while index >= padded.count - 64, padded[index] == 0 { index -= 1 }
        guard index >= padded.count - 64, padded[index] == 0x80 else { return nil }
        return Array(padded[..<index])
    }

    /// Section 4: a UTF-8 JSON object (no byte-order mark, no unpaired surrogate escape, no name
    /// twice at any depth) with the required and optional keys of the right types.
    static func validate(_ message: [UInt8]) -> Outcome {
        guard !message.starts(with: [0xEF, 0xBB, 0xBF]), String(validating: message, as: UTF8.self) != nil,
            case .object(let object)? = try? JSONReader.parse(message), !hasDuplicateNamesAnywhere(.object(object))
        else { return .failure(.badPlaintext) }
        guard case .string(let chatId)? = member(object, "chat_id"), !chatId.isEmpty,
            case .string? = member(object, "title"), case .string? = member(object, "body")
        else { return .failure(.badPlaintext) }
        if let messageId = member(object, "message_id") {
            guard case .string = messageId else { return .failure(.badPlaintext) }
        }
        if let sentAt = member(object, "sent_at") {
            guard case .number(let number) = sentAt, isInteger(number.literal, atMost: 1 << 53 - 1) else { return .failure(.badPlaintext) }
        }
        if let truncated = member(object, "truncated") {
            guard case .bool = truncated else { return .failure(.badPlaintext) }
        }
        return .payload(object)
    }

    // MARK: JSON helpers that compare names by their bytes, as RFC 8259 does.

    static func same(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.elementsEqual(rhs.utf8)
    }

    static func member(_ object: JSONObject, _ name: String) -> JSONValue? {
        object.members.first { same($0.key, name) }?.value
    }

    static func objectValue(_ value: JSONValue) -> JSONObject? {
        if case .object(let object) = value { return object }
        return nil
    }

    static func hasDuplicateNames(_ object: JSONObject) -> Bool {
        var seen = Set<[UInt8]>()
        return object.members.contains { !seen.insert(Array($0.key.utf8)).inserted }
    }

    static func hasDuplicateNamesAnywhere(_ value: JSONValue) -> Bool {
        switch value {
        case .object(let object): return hasDuplicateNames(object) || object.members.contains { hasDuplicateNamesAnywhere($0.value) }
        case .array(let elements): return elements.contains { hasDuplicateNamesAnywhere($0) }
        default: return false
        }
    }

    // MARK: Exact decimal values of JSON number literals.

    /// The value of a valid JSON number literal as sign, significant digits (no leading or
    /// trailing zero; empty for zero) and power of ten. Exponents are clamped far beyond anything
    /// a 70 000-byte input can offset.
    static func decimal(_ literal: String) -> (negative: Bool, digits: [UInt8], exponent: Int) {
        let bytes = Array(literal.utf8)
        var index = 0
        let negative = bytes.first == UInt8(ascii: "-")
        if negative { index += 1 }
        func isDigit(_ i: Int) -> Bool { i < bytes.count && bytes[i] >= UInt8(ascii: "0") && bytes[i] <= UInt8(ascii: "9") }
        var digits: [UInt8] = []
        var exponent = 0
        while isDigit(index) {
            digits.append(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            while isDigit(index) {
                digits.append(bytes[index] - UInt8(ascii: "0"))
                exponent -= 1
                index += 1
            }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            var sign = 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
                if bytes[index] == UInt8(ascii: "-") { sign = -1 }
                index += 1
            }
            var value = 0
            while isDigit(index) {
                value = min(value * 10 + Int(bytes[index] - UInt8(ascii: "0")), 1_000_000_000_000)
                index += 1
            }
            exponent += sign * value
        }
        digits.removeFirst(digits.firstIndex { $0 != 0 } ?? digits.count)
        while digits.last == 0 {
            digits.removeLast()
            exponent += 1
        }
        if digits.isEmpty { return (false, [], 0) }
        return (negative, digits, exponent)
    }

    /// 1, 2 or 3 when the literal's exact value is 1, 2 or 3, else `nil`.
    static func version(_ literal: String) -> Int? {
        let value = decimal(literal)
        guard !value.negative, value.exponent == 0, value.digits == [1] || value.digits == [2] || value.digits == [3] else { return nil }
        return Int(value.digits[0])
    }

    /// Whether the literal is a whole number from 0 to `maximum`.
    static func isInteger(_ literal: String, atMost maximum: UInt64) -> Bool {
        let value = decimal(literal)
        if value.digits.isEmpty { return true }
        guard !value.negative, value.exponent >= 0, value.digits.count + value.exponent <= 19 else { return false }
        var magnitude: UInt64 = 0
        for digit in value.digits + [UInt8](repeating: 0, count: value.exponent) {
            magnitude = magnitude * 10 + UInt64(digit)
        }
        return magnitude <= maximum
    }

    /// Section 8.2, reasons 3 to 7 for version 3: `kid`, `enc`, `ct` and an optional `sid`, then
    /// RFC 9180's DHKEM(X25519, HKDF-SHA256), key schedule and ChaCha20-Poly1305 written out on
    /// `crypto_scalarmult`, `crypto_auth_hmacsha256` and `crypto_aead_chacha20poly1305_ietf`.
    static func decryptVersion3(
        _ envelope: JSONObject, secretKey: [UInt8], publicKey: [UInt8], kid: [UInt8], pinned: [[UInt8]]
    ) -> Outcome {
        func field(_ name: String, _ isValidLength: (Int) -> Bool) -> [UInt8]? {
            guard case .string(let text)? = member(envelope, name), let bytes = try? Base64.decode(text), isValidLength(bytes.count) else {
                return nil
            }
            return bytes
        }
        guard let pushKid = field("kid", { $0 == 8 }), let enc = field("enc", { $0 == 32 }),
            let ciphertext = field("ct", { $0 >= 16 + 64 && ($0 - 16) % 64 == 0 })
        else { return .failure(.malformed) }
        var sid: [UInt8]?
        if member(envelope, "sid") != nil {
            guard let bytes = field("sid", { $0 == 8 }) else { return .failure(.malformed) }
            sid = bytes
        }
        guard pushKid == kid else { return .failure(.keyUnavailable) }
        var senderKey: [UInt8]?
        if let sid {
            guard let key = pinned.first(where: { RawSodium.blake2b($0, outputLength: 8) == sid }) else {
                return .failure(.untrustedSender)
            }
            senderKey = key
        } else if !pinned.isEmpty {
            return .failure(.untrustedSender)
        }
        guard var dh = RawSodium.scalarMult(secretKey, enc) else { return .failure(.authenticationFailed) }
        var kemContext = enc + publicKey
        if let senderKey {
            guard let senderSecret = RawSodium.scalarMult(secretKey, senderKey) else { return .failure(.authenticationFailed) }
            dh += senderSecret
            kemContext += senderKey
        }
        let version = Array("HPKE-v1".utf8)
        let kemSuite = Array("KEM".utf8) + [0x00, 0x20]
        let suite = Array("HPKE".utf8) + [0x00, 0x20, 0x00, 0x01, 0x00, 0x03]
        func extract(_ suiteID: [UInt8], salt: [UInt8], _ label: String, _ ikm: [UInt8]) -> [UInt8] {
            RawSodium.hmacSHA256(key: salt, version + suiteID + Array(label.utf8) + ikm)
        }
        func expand(_ suiteID: [UInt8], prk: [UInt8], _ label: String, _ info: [UInt8], _ length: Int) -> [UInt8] {
            let labeled = [UInt8(length >> 8), UInt8(length & 0xFF)] + version + suiteID + Array(label.utf8) + info
            return Array(RawSodium.hmacSHA256(key: prk, labeled + [0x01]).prefix(length))
        }
        let sharedSecret = expand(kemSuite, prk: extract(kemSuite, salt: [], "eae_prk", dh), "shared_secret", kemContext, 32)
        let context =
            [senderKey == nil ? 0x00 : 0x02] + extract(suite, salt: [], "psk_id_hash", []) + extract(suite, salt: [], "info_hash", label3)
        let secret = extract(suite, salt: sharedSecret, "secret", [])
        let key = expand(suite, prk: secret, "key", context, 32)
        let nonce = expand(suite, prk: secret, "base_nonce", context, 12)
        guard let padded = RawSodium.openIETF(ciphertext, additionalData: label3 + kid + (sid ?? []), nonce: nonce, key: key) else {
            return .failure(.authenticationFailed)
        }
        guard let message = unpad(padded) else { return .failure(.badPlaintext) }
        return validate(message)
    }
}
