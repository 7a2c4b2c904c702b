import Foundation
import KindlyPush
import KindlyPushCore
import Testing

@Suite("Sender keys and sender key files", .offThePool)
final class SenderKeyFileTests {
    let folder: String = {
        let path = NSTemporaryDirectory() + "kindly-senderfile-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return path
    }()

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    @Test("a sender key file is {sid, public_key, secret_key}, 0600, and reads back as the same key")
    func writeAndRead() throws {
        let previous = umask(0)
        defer { umask(previous) }
        let key = SenderKey.generate()
        let path = folder + "/sender.json"
        try SenderKeyFile.write(key, to: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! Int
        #expect(mode == 0o600)
        let object = try #require(try JSONReader.parse([UInt8](Data(contentsOf: URL(fileURLWithPath: path)))).objectValue)
        #expect(object.keys == ["sid", "public_key", "secret_key"])
        #expect(object["sid"] == .string(key.sid.base64URL))
        #expect(object["public_key"] == .string(key.publicKey.base64URL))
        let read = try SenderKeyFile.read(path)
        #expect(read.publicKey == key.publicKey)
        #expect(read.secretKey == key.secretKey)
        #expect(throws: PrivateFileError.exists(path: path)) { try SenderKeyFile.write(SenderKey.generate(), to: path) }
        chmod(path, 0o640)
        #expect(throws: PrivateFileError.tooOpen(path: path, mode: UInt32(0o100640))) { try SenderKeyFile.read(path) }
    }

    @Test("a device key file is never read as a sender key file, nor the reverse")
    func kindsApart() throws {
        let devicePath = folder + "/device.json"
        let senderPath = folder + "/sender.json"
        try KeyFile.write(DeviceKey.generate(), to: devicePath)
        try SenderKeyFile.write(SenderKey.generate(), to: senderPath)
        #expect(throws: PrivateFileError.malformed(path: devicePath, reason: #"a device key file (it has "kid"), not a sender key file"#)) {
            try SenderKeyFile.read(devicePath)
        }
        #expect(throws: PrivateFileError.malformed(path: senderPath, reason: #"a sender key file (it has "sid"), not a device key file"#)) {
            try KeyFile.read(senderPath)
        }
        #expect(throws: PrivateFileError.self) { try KeyFileKeyring(path: senderPath) }
    }

    @Test("a sender key file whose members disagree is refused, and no error quotes the secret")
    func disagreeing() throws {
        let key = SenderKey.generate()
        let other = SenderKey.generate()
        let secret = key.secretKey.withUnsafeBytes { Base64.urlEncoded($0) }
        let cases: [(String, String)] = [
            (#"{"sid":"\#(other.sid)","public_key":"\#(key.publicKey)","secret_key":"\#(secret)"}"#, "the sid is not the public key's"),
            (
                #"{"sid":"\#(key.sid)","public_key":"\#(other.publicKey)","secret_key":"\#(secret)"}"#,
                "the public key does not belong to the secret key"
            ),
            (#"{"public_key":"\#(key.publicKey)","secret_key":"\#(secret)"}"#, #"no "sid" string"#),
            (#"{"sid":"\#(key.sid)","public_key":"\#(key.publicKey)"}"#, #"no "secret_key" string"#),
            (
                #"{"sid":"\#(key.sid)","sid":"\#(key.sid)","public_key":"\#(key.publicKey)","secret_key":"\#(secret)"}"#,
                "a member occurs twice"
            ),
        ]
        for (index, (text, reason)) in cases.enumerated() {
            let path = folder + "/bad-\(index).json"
            #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
            #expect(throws: PrivateFileError.malformed(path: path, reason: reason)) { try SenderKeyFile.read(path) }
            do {
                _ = try SenderKeyFile.read(path)
            } catch {
                #expect(!error.description.contains(secret))
            }
        }
    }

    @Test("sid is BLAKE2b-8 of the public key's bytes as they are; the secret never shows in a description")
    func identities() throws {
        let key = SenderKey.generate()
        let secret = key.secretKey.withUnsafeBytes { Base64.urlEncoded($0) }
        #expect(key.sid.bytes == key.publicKey.rawRepresentation.withUnsafeBytes { BLAKE2b.hash($0, outputLength: 8) })
        #expect(try SenderKey(base64: secret).publicKey == key.publicKey)
        #expect(SenderID(base64: key.sid.base64URL) == key.sid)
        #expect(try SenderPublicKey(base64: key.publicKey.base64URL) == key.publicKey)
        #expect(throws: KeyDecodingError.wrongLength("sender public key")) { try SenderPublicKey(rawRepresentation: [1, 2, 3]) }
        #expect(throws: KeyDecodingError.notBase64("sender secret key")) { try SenderKey(base64: "not base64!") }
        for text in ["\(key)", String(reflecting: key)] {
            #expect(!text.contains(secret))
            #expect(text.contains(key.sid.base64URL))
        }
    }
}
