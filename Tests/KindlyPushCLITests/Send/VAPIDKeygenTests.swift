import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushWebPush
import Testing

/// `kindly-push vapid-keygen` through the real binary, which hands it to kindly-push-send.
@Suite("kindly-push vapid-keygen", .offThePool)
struct VAPIDKeygenTests {
    @Test("vapid-keygen writes a 0600 VAPID key file, prints exactly its public key, and never replaces a file")
    func vapidKeygen() throws {
        let folder = try KeyFolder()
        let path = folder.url.appendingPathComponent("vapid.json").path
        let output = try CLI.run(["vapid-keygen", "--key-file", path])
        #expect(output.status == 0)
        #expect(output.stderr == "")
        let key = try VAPIDKeyFile.read(path)
        #expect(key.publicKey.count == 65 && key.publicKey[0] == 0x04)
        #expect(output.stdout == #"{"public_key":"\#(Base64.urlEncoded(key.publicKey))"}"# + "\n")
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let again = try CLI.run(["vapid-keygen", "--key-file", path])
        #expect(again.status == 74)
        #expect(again.stdout == "")
        #expect(again.stderr == "kindly-push: io: \(path): already exists; refusing to overwrite a key\n")
        #expect(try VAPIDKeyFile.read(path).publicKey == key.publicKey)
        let missing = try CLI.run(["vapid-keygen"])
        #expect(missing.status == 64)
        #expect(missing.stderr == "kindly-push: usage: missing '--key-file PATH' (see 'kindly-push vapid-keygen --help')\n")
    }
}
