import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// FILE arguments, `--output`, `--summary` and `--quiet` (docs/spec/streams.md, "Input and output").
@Suite("kindly-push: files, --output, --summary", .offThePool)
struct StreamConventionsTests {
    static func push(_ key: DeviceKey, chat: String) throws -> String {
        String(
            decoding: try KindlyPushSealer.seal(try DecryptedPayload(chatId: chat, title: "t", body: "b"), for: key.publicKey),
            as: UTF8.self)
    }

    @Test("decrypt reads a file argument, and - as standard input")
    func fileArgument() throws {
        let folder = try KeyFolder()
        let file = folder.url.appendingPathComponent("push.json")
        try Data(try Self.push(folder.key, chat: "from-file").utf8).write(to: file)
        let fromFile = try CLI.run(["decrypt", "--key-file", folder.keyFile, file.path])
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        #expect(try JSONValue(parsing: fromFile.stdout)["chat_id"] == "from-file")
        let fromStdin = try CLI.run(["decrypt", "--key-file", folder.keyFile, "-"], stdin: try Self.push(folder.key, chat: "stdin"))
        #expect(try JSONValue(parsing: fromStdin.stdout)["chat_id"] == "stdin")
    }

    @Test("with --jsonl several files are one stream, in order; without, two files are a usage error")
    func severalFiles() throws {
        let folder = try KeyFolder()
        let first = folder.url.appendingPathComponent("a.jsonl")
        let second = folder.url.appendingPathComponent("b.jsonl")
        try Data((try Self.push(folder.key, chat: "a1") + "\n" + (try Self.push(folder.key, chat: "a2")) + "\n").utf8).write(to: first)
        try Data((try Self.push(folder.key, chat: "b1") + "\n").utf8).write(to: second)
        let stream = try CLI.run(["decrypt", "--jsonl", "--key-file", folder.keyFile, first.path, "-", second.path], stdin: "oops\n")
        #expect(stream.status == 0)
        let lines = stream.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(try lines.map { try JSONValue(parsing: $0)["chat_id"]?.stringValue ?? "error" } == ["a1", "a2", "error", "b1"])
        let single = try CLI.run(["decrypt", "--key-file", folder.keyFile, first.path, second.path])
        #expect(single.status == 64)
        #expect(single.stdout == "")
        let missing = try CLI.run(["check", folder.url.appendingPathComponent("nope.json").path])
        #expect(missing.status == 74)
        #expect(missing.stderr.hasPrefix("kindly-push: io: cannot open '"))
    }

    @Test(
        "--output writes the file atomically with mode 0600, and leaves it untouched on failure",
        arguments: [[:], ["KINDLY_PUSH_TEST_NO_O_TMPFILE": "1"]] as [[String: String]])
    func output(_ environment: [String: String]) throws {
        let folder = try KeyFolder()
        let path = folder.url.appendingPathComponent("plain.json").path
        let push = try Self.push(folder.key, chat: "c-out")
        let written = try CLI.run(["decrypt", "--key-file", folder.keyFile, "--output", path], stdin: push, environment: environment)
        #expect(written.status == 0)
        #expect(written.stdout == "")
        #expect(try JSONValue(parsing: String(contentsOfFile: path, encoding: .utf8))["chat_id"] == "c-out")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        // A failing run leaves the old contents and no temporary file behind.
        let failed = try CLI.run(["decrypt", "--key-file", folder.keyFile, "--output", path], stdin: "{}", environment: environment)
        #expect(failed.status == 1)
        #expect(try JSONValue(parsing: String(contentsOfFile: path, encoding: .utf8))["chat_id"] == "c-out")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.contains("kindly-push-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test("a live filter killed while it writes --output leaves PATH as it was and no file beside it")
    func outputOfAKilledRun() throws {
        let folder = try KeyFolder()
        let path = folder.url.appendingPathComponent("live.jsonl").path
        try "before\n".write(toFile: path, atomically: false, encoding: .utf8)
        let run = try RunningCLI(["decrypt", "--jsonl", "--key-file", folder.keyFile, "--output", path], environment: [:])
        run.write(try Self.push(folder.key, chat: "c-live") + "\n")
        // The line is read and its result written to the new file, then the filter waits for more.
        let pid = run.process.processIdentifier
        #expect(run.waitUntil(seconds: 10) { Self.sizeOfOpenFile(of: pid, in: folder.url.path) > 0 })
        kill(run.process.processIdentifier, SIGKILL)
        run.process.waitUntilExit()
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "before\n")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.contains("kindly-push-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// The size of the file that process `pid` has open in `folder` (named or not), or 0.
    static func sizeOfOpenFile(of pid: Int32, in folder: String) -> Int {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        for descriptor in descriptors {
            let link = "/proc/\(pid)/fd/\(descriptor)"
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: link), target.hasPrefix(folder + "/") else {
                continue
            }
            var status = stat()
            if stat(link, &status) == 0, status.st_mode & S_IFMT == S_IFREG { return Int(status.st_size) }
        }
        return 0
    }

    @Test("--jsonl --output: input that fails to read (EIO) leaves PATH as it was, not a partial result")
    func outputAfterReadError() throws {
        let folder = try KeyFolder()
        let path = folder.url.appendingPathComponent("payloads.jsonl").path
        // /proc/self/mem opens as a file of the reading process and fails at the first read.
        let output = try CLI.run(["decrypt", "--jsonl", "--key-file", folder.keyFile, "--output", path, "/proc/self/mem"])
        #expect(output.status == 74)
        #expect(output.stderr.hasPrefix("kindly-push: io: "))
        #expect(!FileManager.default.fileExists(atPath: path))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.contains("kindly-push-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test("--summary prints the count of each result code on stderr; no progress line when stderr is not a terminal")
    func summary() throws {
        let folder = try KeyFolder()
        let input = [
            try Self.push(folder.key, chat: "1"), "nope", try Self.push(DeviceKey.generate(), chat: "2"),
            try Self.push(folder.key, chat: "3"),
        ]
        .joined(separator: "\n")
        let output = try CLI.run(["decrypt", "--jsonl", "--summary", "--key-file", folder.keyFile], stdin: input)
        #expect(output.status == 0)
        #expect(output.stderr == "kindly-push: summary: 4 lines: 2 ok, 1 key_unavailable, 1 bad_input\n")
        let quiet = try CLI.run(["decrypt", "--jsonl", "--quiet", "--key-file", folder.keyFile], stdin: input)
        #expect(quiet.stderr == "")
        #expect(try CLI.run(["decrypt", "--summary", "--key-file", folder.keyFile], stdin: input).status == 64)
    }
}
