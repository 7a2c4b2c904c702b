import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import KindlyPushVectors
import Testing

/// The command's row of "ciphertext is never shown": every output line of `route --jsonl` (in
/// each app state) and `decrypt --jsonl` for every vector, compared byte for byte with that
/// line's envelope `ct` (``CiphertextExposure``). The Redis workers write these same lines.
@Suite("The command never prints the envelope's ciphertext", .offThePool)
struct CiphertextCLITests {
    @Test("no line of route --jsonl or decrypt --jsonl holds 12 bytes of its push's ct, on every vector of versions 1 to 3")
    func neverPrinted() throws {
        let folder = CLI.packageRoot.appendingPathComponent("TestVectors")
        var byKey: [String: (key: DeviceKey, pushes: [JSONValue])] = [:]
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
        for url in files where url.pathExtension == "json" {
            for vector in try TestVector.vectors(inFile: [UInt8](Data(contentsOf: url))) {
                guard vector.apns.objectValue?["kindly"]?.objectValue?["ct"]?.stringValue != nil else { continue }
                byKey[vector.deviceKey.publicKey.base64URL, default: (vector.deviceKey, [])].pushes.append(vector.apns)
            }
        }
        var checked = 0
        for (key, pushes) in byKey.values {
            let keys = try KeyFolder(key: key)
            let input = pushes.map(\.compactText).joined(separator: "\n") + "\n"
            let runs = [
                ["route", "--jsonl", "--app-state", "foreground", "--key-file", keys.keyFile],
                ["route", "--jsonl", "--app-state", "background", "--key-file", keys.keyFile],
                ["decrypt", "--jsonl", "--key-file", keys.keyFile],
            ]
            for arguments in runs {
                let output = try CLI.run(arguments, stdin: input)
                #expect(output.status == 0, "\(arguments): \(output.stderr)")
                let lines = output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
                try #require(lines.count == pushes.count, "\(arguments)")
                for (line, push) in zip(lines, pushes) {
                    #expect(!CiphertextExposure.exposes([String(line)], ciphertextOf: push), "\(arguments): \(line)")
                    checked += 1
                }
                #expect(!CiphertextExposure.exposes([output.stderr], ciphertextOf: pushes[0]))
            }
        }
        #expect(checked >= 1500)
    }
}
