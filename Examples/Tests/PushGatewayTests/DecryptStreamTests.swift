import Foundation
import KindlyPush
import Testing

/// The command's binary: `$KINDLY_PUSH_BINARY`, else the debug build of the package above
/// (tools/test builds it before it runs tools/examples).
private var kindlyPushBinary: URL {
    if let path = ProcessInfo.processInfo.environment["KINDLY_PUSH_BINARY"], !path.isEmpty {
        return URL(fileURLWithPath: path)
    }
    return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/debug/kindly-push")
}

/// A service decrypts a stream through the library's async API and gets exactly what the command
/// prints for the same stream, line for line, in order.
@Suite("A stream decrypted by a service and by the command")
struct DecryptStreamTests {
    @Test("20,000 pushes with bad lines among them: decryptStream(jsonLines:jobs:) gives decrypt --jsonl's lines, in order")
    func sameAsCommand() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stream-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let key = DeviceKey.generate()
        let other = DeviceKey.generate()
        let keyPath = folder.appendingPathComponent("device.json").path
        try KeyFile.write(key, to: keyPath)

        // Bad lines of every kind, one every 997 lines: not JSON, empty, another JSON value,
        // another provider's push, a malformed envelope, another key's push, a tampered one, a
        // line over 64 KiB, a document spread over lines.
        let bad: [[UInt8]] = [
            Array("not json".utf8), [], Array("[1,2]".utf8), Array(#"{"aps":{"alert":"hi"}}"#.utf8),
            Array(#"{"kindly":{"v":1,"kid":"AAAA"}}"#.utf8), Array(#"{"kindly":{"v":9}}"#.utf8),
            [UInt8](repeating: UInt8(ascii: " "), count: 70_000), Array("{".utf8),
        ]
        var input: [UInt8] = []
        var expectedBad = 0
        for index in 0..<20_000 {
            if index % 997 == 5 {
                input += bad[index / 997 % bad.count]
                expectedBad += 1
            } else {
                let payload = try DecryptedPayload(
                    chatId: "chat-\(index % 17)", title: "From \(index)", body: String(repeating: "é", count: index % 40),
                    messageId: index % 3 == 0 ? "m-\(index)" : nil)
                var push = try KindlyPushSealer.seal(payload, for: (index % 1009 == 7 ? other : key).publicKey)
                if index % 1013 == 11, let at = push.lastIndex(of: UInt8(ascii: "\"")) {
                    // The last quote closes the ciphertext or a field after it: change a byte before it.
                    push[at - 2] = push[at - 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
                }
                input += push
            }
            input.append(0x0A)
        }
        let inputURL = folder.appendingPathComponent("pushes.jsonl")
        try Data(input).write(to: inputURL)

        // The command.
        let outputURL = folder.appendingPathComponent("command.jsonl")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        let process = Process()
        process.executableURL = kindlyPushBinary
        process.arguments = ["decrypt", "--jsonl", "--jobs", "2", "--key-file", keyPath]
        process.standardInput = try FileHandle(forReadingFrom: inputURL)
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "kindly-push decrypt --jsonl exited \(process.terminationStatus)")
        let commandLines = try Data(contentsOf: outputURL).split(separator: 0x0A, omittingEmptySubsequences: false).dropLast()

        // The library, as a service: the same file read in chunks of an odd size, the same key file.
        let decryption = KindlyPushDecryption(keyring: try KeyFileKeyring(path: keyPath))
        var results: [PushStreamResult] = []
        let chunks = FileChunks(path: inputURL.path, chunkSize: 10_007)
        for try await result in decryption.decryptStream(jsonLines: chunks, jobs: 2) { results.append(result) }

        #expect(results.count == 20_000)
        #expect(commandLines.count == 20_000)
        var mismatches = 0
        for (line, result) in zip(commandLines, results) where [UInt8](line) != result.json { mismatches += 1 }
        #expect(mismatches == 0)
        let codes = Dictionary(grouping: results, by: \.code).mapValues(\.count)
        #expect(codes["bad_input"] ?? 0 > 0 && codes["bad_input"] ?? 0 < expectedBad)
        #expect(codes["key_unavailable"] ?? 0 > 0 && codes["authentication_failed"] ?? 0 > 0 && codes["not_kindly"] ?? 0 > 0)
        #expect(codes["malformed"] ?? 0 > 0 && codes["unsupported_version"] ?? 0 > 0)
        #expect((codes["decrypted"] ?? 0) > 19_800)
        // The structured payload of a decrypted push is there too.
        let first = try #require(results.first)
        #expect(first.payload?.chatId == "chat-0")
        #expect(first.payload?.title == "From 0")
    }
}
