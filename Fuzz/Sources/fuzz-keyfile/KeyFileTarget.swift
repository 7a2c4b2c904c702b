import FuzzSupport
import KindlyPush
import KindlyPushCore

/// Key-file parsing (`KeyFile.parse`), with the secret key read straight into a wiped buffer.
///
/// Invariants: the parser accepts exactly what a reference reading of cli.md accepts (a JSON
/// object, no duplicate names, `secret_key` canonical base64 of 32 bytes, `public_key` the
/// X25519 public key of it, `kid` = BLAKE2b-8 of that, all computed with libsodium directly),
/// except that the parser also refuses an escape inside the secret string; the key it returns
/// has those bytes; the object it returns holds `null`, never the secret text; and neither an
/// error message nor the key's description contains the secret text.
enum KeyFileTarget {
    static let path = "fuzz-input"

    static func check(_ input: UnsafeRawBufferPointer) {
        let reference = referenceParse(input)
        let secretParse = try? JSONReader.parseObject(input, withSecretMembers: ["secret_key"])
        let parsed: (key: DeviceKey, object: JSONObject)
        do {
            parsed = try KeyFile.parse(input, path: path)
        } catch {
            if let secretText = rawSecretText(input, secretParse), secretText.count >= 16,
                secretText.allSatisfy({ base64Characters.contains($0) })
            {
                require(!error.description.utf8.contains(secretText), "the error message contains the secret text: \(error)")
            }
            // The one refusal the reference does not make: the plain reader decodes an escape in
            // the secret string, the secret-keeping reader refuses it (base64 needs none).
            require(reference == nil || secretParse == nil, "refused a key file the reference accepts: \(error)")
            return
        }
        guard let reference else { fail("accepted a key file the reference refuses") }
        let key = parsed.key
        let secret = key.secretKey.withUnsafeBytes { Array($0) }
        require(secret == reference.secret, "the secret key differs from the file's")
        require(key.publicKey.rawRepresentation == reference.publicKey, "the public key differs from the file's")
        require(key.publicKey.rawRepresentation == RawSodium.scalarMultBase(secret), "the public key is not the secret key's")
        let kid = RawSodium.blake2b(key.publicKey.rawRepresentation, outputLength: 8)
        require(key.kid.bytes == kid && kid == reference.kid, "kid != BLAKE2b-8(pk)")
        require(!parsed.object.hasDuplicateKeys, "accepted duplicate names")
        require(parsed.object.values(named: "secret_key") == [.null], "the returned object holds the secret key")
        require(parsed.object.members.count == reference.object.count, "the returned object has other members than the file")
        for (mine, theirs) in zip(parsed.object.members, reference.object.members) where mine.key != "secret_key" {
            require(mine == theirs, "member \(mine.key) differs from the file's")
        }
        let secretText = Array(Base64.urlEncoded(secret).utf8)
        for description in [String(describing: key), String(reflecting: key), String(describing: key.secretKey)] {
            require(!description.utf8.contains(secretText), "a description shows the secret key")
        }
    }

    struct Reference: Equatable {
        var secret: [UInt8]
        var publicKey: [UInt8]
        var kid: [UInt8]
        var object: JSONObject
    }

    /// cli.md's key file, read with the plain JSON reader and checked with libsodium directly.
    static func referenceParse(_ input: UnsafeRawBufferPointer) -> Reference? {
        guard case .object(let object)? = try? JSONReader.parse(input), !object.hasDuplicateKeys,
            case .string(let secretText)? = object["secret_key"], let secret = try? Base64.decode(secretText), secret.count == 32,
            case .string(let publicText)? = object["public_key"], let publicKey = try? Base64.decode(publicText),
            publicKey == RawSodium.scalarMultBase(secret),
            case .string(let kidText)? = object["kid"], let kid = try? Base64.decode(kidText),
            kid == RawSodium.blake2b(publicKey, outputLength: 8)
        else { return nil }
        return Reference(secret: secret, publicKey: publicKey, kid: kid, object: object)
    }

    static let base64Characters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=".utf8)

    /// The text of the top-level `secret_key` string: raw from the secret-keeping reader, or
    /// decoded by the plain reader when the other refused the input.
    static func rawSecretText(
        _ input: UnsafeRawBufferPointer, _ secretParse: (object: JSONObject, secretRanges: [String: Range<Int>])?
    ) -> [UInt8]? {
        if let range = secretParse?.secretRanges["secret_key"] { return Array(input[range]) }
        if case .object(let object)? = try? JSONReader.parse(input), case .string(let text)? = object["secret_key"] {
            return Array(text.utf8)
        }
        return nil
    }
}

extension String.UTF8View {
    /// Whether `needle` occurs in these bytes.
    func contains(_ needle: [UInt8]) -> Bool {
        Array(self).contains(needle)
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in these bytes.
    func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard needle.count <= count else { return false }
        for start in 0...(count - needle.count) where self[start..<(start + needle.count)].elementsEqual(needle) {
            return true
        }
        return false
    }
}
