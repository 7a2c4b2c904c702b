import FuzzSupport
import KindlyPush
import KindlyPushCore

/// Key-file parsing (`KeyFile.parse`) and sender-key-file parsing (`SenderKeyFile.parse`), with
/// the secret key read straight into a wiped buffer. Every input is read as both kinds.
///
/// Invariants: each parser accepts exactly what a reference reading of docs/spec/streams.md accepts (a JSON
/// object, no duplicate names, `secret_key` canonical base64 of 32 bytes, `public_key` the
/// X25519 public key of it, `kid` (or `sid`) = BLAKE2b-8 of that, all computed with libsodium
/// directly, and no member of the other kind's id: a device key file has no `sid`, a sender key
/// file no `kid`), except that the parsers also refuse an escape inside the secret string; no
/// input is accepted as both kinds; the key returned has those bytes; the object returned holds
/// `null`, never the secret text; and neither an error message nor the key's description
/// contains the secret text.
enum KeyFileTarget {
    static let path = "fuzz-input"

    /// What a parser of one kind returned, in a shape both kinds share.
    struct Parsed {
        var secret: [UInt8]
        var publicKey: [UInt8]
        var id: [UInt8]
        var object: JSONObject
        var descriptions: [String]
    }

    static func check(_ input: UnsafeRawBufferPointer) {
        let device = check(input, idMember: "kid", otherIDMember: "sid") { (input) throws(PrivateFileError) in
            let parsed = try KeyFile.parse(input, path: path)
            let key = parsed.key
            return Parsed(
                secret: key.secretKey.withUnsafeBytes { Array($0) }, publicKey: key.publicKey.rawRepresentation, id: key.kid.bytes,
                object: parsed.object,
                descriptions: [String(describing: key), String(reflecting: key), String(describing: key.secretKey)])
        }
        let sender = check(input, idMember: "sid", otherIDMember: "kid") { (input) throws(PrivateFileError) in
            let parsed = try SenderKeyFile.parse(input, path: path)
            let key = parsed.key
            return Parsed(
                secret: key.secretKey.withUnsafeBytes { Array($0) }, publicKey: key.publicKey.rawRepresentation, id: key.sid.bytes,
                object: parsed.object, descriptions: [String(describing: key), String(reflecting: key)])
        }
        require(!(device && sender), "accepted as a device key file and as a sender key file")
    }

    /// Checks one kind's parser against the reference; true when it accepted the input.
    static func check(
        _ input: UnsafeRawBufferPointer, idMember: String, otherIDMember: String,
        _ parse: (UnsafeRawBufferPointer) throws(PrivateFileError) -> Parsed
    ) -> Bool {
        let reference = referenceParse(input, idMember: idMember, otherIDMember: otherIDMember)
        let secretParse = try? JSONReader.parseObject(input, withSecretMember: "secret_key")
        let parsed: Parsed
        do {
            parsed = try parse(input)
        } catch {
            if let secretText = rawSecretText(input, secretParse), secretText.count >= 16,
                secretText.allSatisfy({ base64Characters.contains($0) })
            {
                require(!error.description.utf8.contains(secretText), "the error message contains the secret text: \(error)")
            }
            // The one refusal the reference does not make: the plain reader decodes an escape in
            // the secret string, the secret-keeping reader refuses it (base64 needs none).
            require(reference == nil || secretParse == nil, "refused a \(idMember) key file the reference accepts: \(error)")
            return false
        }
        guard let reference else { fail("accepted a \(idMember) key file the reference refuses") }
        require(parsed.secret == reference.secret, "the secret key differs from the file's")
        require(parsed.publicKey == reference.publicKey, "the public key differs from the file's")
        require(parsed.publicKey == RawSodium.scalarMultBase(parsed.secret), "the public key is not the secret key's")
        let id = RawSodium.blake2b(parsed.publicKey, outputLength: 8)
        require(parsed.id == id && id == reference.id, "\(idMember) != BLAKE2b-8(pk)")
        require(!parsed.object.hasDuplicateKeys, "accepted duplicate names")
        require(parsed.object[otherIDMember] == nil, "accepted a file with \(otherIDMember)")
        require(parsed.object.values(named: "secret_key") == [.null], "the returned object holds the secret key")
        require(parsed.object.members.count == reference.object.count, "the returned object has other members than the file")
        for (mine, theirs) in zip(parsed.object.members, reference.object.members) where mine.key != "secret_key" {
            require(mine == theirs, "member \(mine.key) differs from the file's")
        }
        let secretText = Array(Base64.urlEncoded(parsed.secret).utf8)
        for description in parsed.descriptions {
            require(!description.utf8.contains(secretText), "a description shows the secret key")
        }
        return true
    }

    struct Reference: Equatable {
        var secret: [UInt8]
        var publicKey: [UInt8]
        var id: [UInt8]
        var object: JSONObject
    }

    /// docs/spec/streams.md's key file (`idMember` "kid") or sender key file ("sid"), read with the plain JSON
    /// reader and checked with libsodium directly.
    static func referenceParse(_ input: UnsafeRawBufferPointer, idMember: String, otherIDMember: String) -> Reference? {
        guard case .object(let object)? = try? JSONReader.parse(input), !object.hasDuplicateKeys, object[otherIDMember] == nil,
            case .string(let secretText)? = object["secret_key"], let secret = try? Base64.decode(secretText), secret.count == 32,
            case .string(let publicText)? = object["public_key"], let publicKey = try? Base64.decode(publicText),
            publicKey == RawSodium.scalarMultBase(secret),
            case .string(let idText)? = object[idMember], let id = try? Base64.decode(idText),
            id == RawSodium.blake2b(publicKey, outputLength: 8)
        else { return nil }
        return Reference(secret: secret, publicKey: publicKey, id: id, object: object)
    }

    static let base64Characters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=".utf8)

    /// The text of the top-level `secret_key` string: raw from the secret-keeping reader, or
    /// decoded by the plain reader when the other refused the input.
    static func rawSecretText(
        _ input: UnsafeRawBufferPointer, _ secretParse: (object: JSONObject, secretRange: Range<Int>?)?
    ) -> [UInt8]? {
        if let range = secretParse?.secretRange { return Array(input[range]) }
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
