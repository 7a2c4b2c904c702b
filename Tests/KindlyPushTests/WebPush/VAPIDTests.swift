import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushLibcrypto
import KindlyPushWebPush
import Testing

/// VAPID (RFC 8292): the header's JWT (ES256, the endpoint's origin, 12 hours, the subject),
/// its `k`, and the VAPID key file.
@Suite("VAPID (RFC 8292) and its key file", .offThePool)
struct VAPIDTests {
    static func part(_ token: Substring) throws -> JSONValue {
        try JSONReader.parse(try Base64.decode(String(token)))
    }

    @Test("the header is vapid t=JWT, k=KEY: ES256 over the endpoint's origin, 12 hours ahead, the subject; k is the public key")
    func headerVerifies() throws {
        let key = try ES256Key.generate()
        let header = try VAPID.authorization(
            endpoint: "https://updates.push.services.mozilla.com/wpush/v2/gAAAA?x=1", subject: "mailto:push@example.com", key: key,
            now: 1_700_000_000)
        let prefix = "vapid t="
        #expect(header.hasPrefix(prefix))
        let parts = header.dropFirst(prefix.count).split(separator: ",", maxSplits: 1)
        let token = parts[0]
        #expect(parts[1] == " k=" + Base64.urlEncoded(key.publicKey))
        let pieces = token.split(separator: ".")
        #expect(pieces.count == 3)
        let jwtHeader = try Self.part(pieces[0])
        #expect(jwtHeader["alg"]?.stringValue == "ES256")
        #expect(jwtHeader["typ"]?.stringValue == "JWT")
        let claims = try Self.part(pieces[1])
        #expect(claims["aud"]?.stringValue == "https://updates.push.services.mozilla.com")
        #expect(claims["exp"]?.numberValue?.literal == "\(1_700_000_000 + 12 * 3600)")
        #expect(claims["sub"]?.stringValue == "mailto:push@example.com")
        let signature = try Base64.decode(String(pieces[2]))
        #expect(signature.count == 64)
        let publicKey = try key.publicKey.withUnsafeBytes { try P256.PublicKey(uncompressed: $0) }
        let signed = Array(token.utf8[..<token.utf8.lastIndex(of: UInt8(ascii: "."))!])
        #expect(signed.withUnsafeBytes { publicKey.verifyES256(signature: signature, message: $0) })
        var changed = signature
        changed[10] ^= 1
        #expect(!signed.withUnsafeBytes { publicKey.verifyES256(signature: changed, message: $0) })
    }

    @Test("the audience is the endpoint's origin: scheme and host in lower case, a port only when not the default")
    func origins() throws {
        let cases = [
            ("https://fcm.googleapis.com/fcm/send/abc", "https://fcm.googleapis.com"),
            ("HTTPS://Push.Example.COM:443/x", "https://push.example.com"),
            ("https://push.example.com:8443/x?y#z", "https://push.example.com:8443"),
            ("http://127.0.0.1:8080/up/abc", "http://127.0.0.1:8080"),
            ("http://localhost:80", "http://localhost"),
            ("https://[::1]:4443/p", "https://[::1]:4443"),
            ("https://[::1]/p", "https://[::1]"),
        ]
        for (endpoint, origin) in cases { #expect(try VAPID.origin(of: endpoint) == origin) }
        for bad in [
            "ftp://example.com/", "https://", "https:///path", "https://user@example.com/", "https://example.com:/", "example.com/x",
        ] {
            #expect(throws: WebPushError.self, "\(bad)") { try VAPID.origin(of: bad) }
        }
        let key = try ES256Key.generate()
        #expect(throws: WebPushError.self) {
            try VAPID.authorization(endpoint: "https://example.com/", subject: "push@example.com", key: key, now: 0)
        }
    }

    @Test("a VAPID key file is 0600, is never replaced, and reads back as the same key")
    func keyFileRoundTrip() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("vapid-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/vapid.json"
        let key = try ES256Key.generate()
        try VAPIDKeyFile.write(key, to: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(throws: PrivateFileError.exists(path: path)) { try VAPIDKeyFile.write(try ES256Key.generate(), to: path) }
        let read = try VAPIDKeyFile.read(path)
        #expect(read.publicKey == key.publicKey)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let object = try JSONReader.parse(Array(text.utf8))
        #expect(object["public_key"]?.stringValue == Base64.urlEncoded(key.publicKey))
        #expect(object["secret_key"]?.stringValue?.utf8.count == 43)
    }

    @Test("a VAPID key file whose members disagree, or a Kindly key file, is refused")
    func keyFileRefusals() throws {
        let key = try ES256Key.generate()
        let other = try ES256Key.generate()
        let secret = key.withScalar { Base64.urlEncoded(Array($0)) }
        let texts = [
            #"{"public_key":"\#(Base64.urlEncoded(other.publicKey))","secret_key":"\#(secret)"}"#,
            #"{"public_key":"\#(Base64.urlEncoded(key.publicKey))"}"#,
            #"{"public_key":"\#(Base64.urlEncoded(key.publicKey))","secret_key":"AAAA"}"#,
            #"{"public_key":"\#(Base64.urlEncoded(key.publicKey))","secret_key":"\#(String(repeating: "A", count: 43))"}"#,
            #"{"kid":"AAAAAAAAAAA","public_key":"\#(Base64.urlEncoded(key.publicKey))","secret_key":"\#(secret)"}"#,
        ]
        for text in texts {
            #expect(throws: PrivateFileError.self) { try Array(text.utf8).withUnsafeBytes { try VAPIDKeyFile.parse($0, path: "k.json") } }
        }
        let good = #"{"public_key":"\#(Base64.urlEncoded(key.publicKey))","secret_key":"\#(secret)"}"#
        #expect(try Array(good.utf8).withUnsafeBytes { try VAPIDKeyFile.parse($0, path: "k.json") }.publicKey == key.publicKey)
    }
}
