package import KindlyPushBase
package import KindlyPushCore

/// A test vector of docs/spec/streams.md: a push for a device key (and the reader's pinned sender keys) and
/// what decrypting it must give, and for a sealing vector the ephemeral key, nonce, plaintext
/// (and for version 2 and version 3 mode_auth the sender's secret key) that reproduce its
/// envelope byte for byte. A version 3 sealing vector (its envelope's `v` is 3) has no `nonce`:
/// HPKE derives it. Any backend or client can check itself against these files.
package struct TestVector: Sendable {
    /// What decrypting `apns` must give.
    package enum Expectation: Sendable, Equatable {
        case payload(JSONObject)
        case failure(DecryptionFailure.Reason)
    }

    /// The inputs of a sealing vector.
    package struct Sealing: Sendable {
        package let ephemeralSecretKey: SecureBytes
        /// `nonce`; empty for version 3.
        package let nonce: [UInt8]
        /// The envelope's version: 3 is sealed with HPKE; `nil` is 2 with a sender key, 1 without.
        package let version: WireVersion?
        /// The exact UTF-8 JSON text that was padded and sealed.
        package let plaintext: String
        /// `sender_secret_key`: the sender key of a version 2 or version 3 mode_auth sealing vector.
        package let sender: SenderKey?
    }

    package let description: String
    package let deviceKey: DeviceKey
    /// `pinned_sender_keys`: the reader's pinned set (absent: none). Non-empty is pinned mode.
    package let pinnedSenderKeys: [SenderPublicKey]
    package let apns: JSONValue
    package let expected: Expectation
    package let sealing: Sealing?

    /// Why a vector file could not be read.
    package struct FormatError: Error, Sendable, Equatable, CustomStringConvertible {
        package let description: String
    }

    /// The vectors in a file's bytes: one vector object, or `{"vectors": [...]}`. The file is read
    /// with the same strict reader as pushes, so duplicate members inside `apns` stay visible.
    package static func vectors(inFile bytes: [UInt8]) throws(FormatError) -> [TestVector] {
        let document: JSONValue
        do {
            document = try JSONReader.parse(bytes)
        } catch {
            throw FormatError(description: "not JSON: \(error)")
        }
        guard case .object(let root) = document else { throw FormatError(description: "not a JSON object") }
        guard let list = root["vectors"] else { return [try TestVector(root)] }
        guard case .array(let elements) = list else { throw FormatError(description: "\"vectors\" is not an array") }
        var vectors: [TestVector] = []
        for (index, element) in elements.enumerated() {
            guard case .object(let object) = element else { throw FormatError(description: "vector \(index + 1) is not an object") }
            do throws(FormatError) {
                vectors.append(try TestVector(object))
            } catch {
                throw FormatError(description: "vector \(index + 1): \(error.description)")
            }
        }
        return vectors
    }

    /// One vector from its object.
    package init(_ object: JSONObject) throws(FormatError) {
        func string(_ key: String) throws(FormatError) -> String {
            guard let value = object[key]?.stringValue else { throw FormatError(description: "\"\(key)\" is missing or not a string") }
            return value
        }
        func bytes(_ key: String) throws(FormatError) -> [UInt8] {
            guard let decoded = try? Base64.decode(try string(key)) else { throw FormatError(description: "\"\(key)\" is not base64") }
            return decoded
        }
        /// A secret decoded straight into a wiped buffer, never into an array.
        func secret(_ key: String) throws(FormatError) -> SecureBytes {
            let text = try string(key)
            guard let decoded = try? text.withUTF8Bytes({ (raw) throws(Base64.DecodingError) in try Base64.decodeSecret(raw) }) else {
                throw FormatError(description: "\"\(key)\" is not base64")
            }
            return decoded
        }
        description = (try? string("description")) ?? ""
        let secretBytes = try secret("device_secret_key")
        guard let secretKey = try? DeviceSecretKey(secretBytes) else {
            throw FormatError(description: "\"device_secret_key\" is not 32 bytes")
        }
        deviceKey = DeviceKey(secretKey: secretKey)
        var pinned: [SenderPublicKey] = []
        if let list = object["pinned_sender_keys"] {
            guard case .array(let elements) = list else { throw FormatError(description: "\"pinned_sender_keys\" is not an array") }
            for element in elements {
                guard let text = element.stringValue, let key = try? SenderPublicKey(base64: text) else {
                    throw FormatError(description: "\"pinned_sender_keys\" holds something other than 32-byte base64 keys")
                }
                pinned.append(key)
            }
        }
        pinnedSenderKeys = pinned
        guard let apns = object["apns"] else { throw FormatError(description: "\"apns\" is missing") }
        self.apns = apns
        guard let expected = object["expected"]?.objectValue, let result = expected["result"]?.stringValue else {
            throw FormatError(description: "\"expected.result\" is missing")
        }
        switch result {
        case "ok":
            guard let payload = expected["payload"]?.objectValue else { throw FormatError(description: "\"expected.payload\" is missing") }
            self.expected = .payload(payload)
        case "error":
            guard let reason = expected["reason"]?.stringValue else { throw FormatError(description: "\"expected.reason\" is missing") }
            guard let known = DecryptionFailure.Reason(code: reason) else {
                throw FormatError(description: "\"expected.reason\" is not a reason code of the spec")
            }
            self.expected = .failure(known)
        default:
            throw FormatError(description: "\"expected.result\" is neither \"ok\" nor \"error\"")
        }
        if object["ephemeral_secret_key"] != nil || object["nonce"] != nil || object["plaintext"] != nil {
            var sender: SenderKey?
            if object["sender_secret_key"] != nil {
                guard let key = try? SenderKey(base64: try string("sender_secret_key")) else {
                    throw FormatError(description: "\"sender_secret_key\" is not 32 bytes of base64")
                }
                sender = key
            }
            let isVersion3 = apns.objectValue?["kindly"]?.objectValue?["v"]?.numberValue?.integerValue(in: 3...3) != nil
            if isVersion3, object["nonce"] != nil { throw FormatError(description: "a version 3 sealing vector has no \"nonce\"") }
            sealing = Sealing(
                ephemeralSecretKey: try secret("ephemeral_secret_key"),
                nonce: isVersion3 ? [] : try bytes("nonce"),
                version: isVersion3 ? .three : nil,
                plaintext: try string("plaintext"),
                sender: sender)
        } else {
            sealing = nil
        }
    }

    /// Runs the vector through the library: `nil` when it passes, else what went wrong.
    package func failure() -> String? {
        let result = KindlyPushDecryption.decryptResult(userInfo: apns, using: deviceKey, pinnedSenderKeys: pinnedSenderKeys)
        switch (expected, result) {
        case (.payload(let expectedPayload), .success(let payload)):
            guard payload.object.hasSameMembers(as: expectedPayload) else {
                return "decrypted to \(JSONValue.object(payload.object)), expected \(JSONValue.object(expectedPayload))"
            }
        case (.payload, .failure(let failure)):
            return "failed with \(failure), expected a payload"
        case (.failure(let reason), .success):
            return "decrypted, expected \(reason.code)"
        case (.failure(let reason), .failure(let failure)):
            guard failure.reason == reason else { return "failed with \(failure), expected \(reason.code)" }
        }
        return sealing.flatMap(resealingFailure)
    }

    /// Re-seals the plaintext with the vector's ephemeral key and nonce (and sender key) and
    /// compares the envelope's binary fields byte for byte: `kid`, `epk`, `n`, `ct` (version 3:
    /// `kid`, `enc`, `ct`), and `sid` when there is a sender.
    private func resealingFailure(_ sealing: Sealing) -> String? {
        let envelope: SealedEnvelope
        do throws(KindlyPushSealer.SealingError) {
            let binding = try sealing.sender.map { (sender) throws(KindlyPushSealer.SealingError) in
                try KindlyPushSealer.binding(of: sender, for: deviceKey.publicKey)
            }
            envelope = try KindlyPushSealer.sealMessage(
                Array(sealing.plaintext.utf8), for: deviceKey.publicKey, sender: binding, version: sealing.version,
                ephemeralSecretKey: sealing.ephemeralSecretKey, nonce: sealing.nonce)
        } catch {
            return "re-sealing failed: \(error)"
        }
        guard let kindly = apns.objectValue?["kindly"]?.objectValue else { return "a sealing vector without a kindly object" }
        var fields: [(String, [UInt8])] = [
            ("kid", envelope.kid.bytes), (envelope.version.ephemeralKeyName, envelope.ephemeralPublicKey), ("ct", envelope.ciphertext),
        ]
        if envelope.version.hasNonce { fields.append(("n", envelope.nonce)) }
        if let sid = envelope.senderID { fields.append(("sid", sid.bytes)) }
        for (name, bytes) in fields {
            guard let text = kindly[name]?.stringValue, let written = try? Base64.decode(text) else {
                return "re-sealing: \"kindly.\(name)\" is not base64"
            }
            guard written == bytes else { return "re-sealing gives a different \"\(name)\"" }
        }
        return nil
    }
}
