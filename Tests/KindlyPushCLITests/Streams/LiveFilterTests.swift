import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// `--jsonl` is a live filter (docs/spec/streams.md, "Input and output"): each result is written as soon as
/// the input would block, so `tail -f pushes.jsonl | kindly-push decrypt --jsonl` prints as lines
/// arrive instead of waiting for a batch to fill.
@Suite("--jsonl as a live filter", .offThePool)
struct LiveFilterTests {
    /// A running `kindly-push` whose standard input the test writes line by line.
    final class LiveProcess {
        let process = Process()
        let input = Pipe()
        let output = Pipe()

        /// Runs the binary with `arguments`, in `environment` when one is given (else this process's).
        init(_ arguments: [String], environment: [String: String]? = nil) throws {
            process.executableURL = CLI.binary
            process.arguments = arguments
            if let environment { process.environment = environment }
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        func send(_ line: String) {
            input.fileHandleForWriting.write(Data((line + "\n").utf8))
        }

        /// The next output line, or `nil` when none arrives within `timeout`.
        func nextLine(timeout: Double) -> String? {
            let descriptor = output.fileHandleForReading.fileDescriptor
            var line: [UInt8] = []
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&entry, 1, 50) > 0 else { continue }
                var byte: UInt8 = 0
                let count = read(descriptor, &byte, 1)
                if count < 0, errno == EINTR { continue }
                guard count == 1 else { return nil }
                if byte == 0x0A { return String(decoding: line, as: UTF8.self) }
                line.append(byte)
            }
            return nil
        }

        func finish() -> Int32 {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
            return process.terminationStatus
        }
    }

    static func push(for key: DeviceKey, chat: String) throws -> String {
        let payload = try DecryptedPayload(chatId: chat, title: "t", body: "b")
        return String(decoding: try KindlyPushSealer.seal(payload, for: key.publicKey), as: UTF8.self)
    }

    @Test(
        "each line's result is printed before the next line is written",
        arguments: [["--jobs", "1"], ["--jobs", "2"]])
    func decryptIsLive(_ jobs: [String]) throws {
        let folder = try KeyFolder()
        let live = try LiveProcess(["decrypt", "--jsonl", "--key-file", folder.keyFile] + jobs)
        for chat in ["c-1", "c-2", "c-3"] {
            live.send(try Self.push(for: folder.key, chat: chat))
            let line = try #require(live.nextLine(timeout: 10), "no result for \(chat) while the input stays open")
            #expect(try JSONValue(parsing: line)["chat_id"] == .string(chat))
        }
        // A bad line is answered live too.
        live.send("not json")
        let error = try #require(live.nextLine(timeout: 10))
        #expect(try JSONValue(parsing: error)["error"]?["code"] == "bad_input")
        #expect(live.finish() == 0)
    }

    @Test(
        "check, route and seal are live filters too",
        arguments: [["check", "--jsonl"], ["route", "--jsonl", "--app-state", "background"], ["seal", "--jsonl"]])
    func otherCommandsAreLive(_ arguments: [String]) throws {
        let folder = try KeyFolder()
        let isSeal = arguments[0] == "seal"
        let live = try LiveProcess(arguments + (isSeal ? ["--public-key=" + folder.key.publicKey.base64URL] : []))
        let line = isSeal ? #"{"chat_id":"c-1","title":"t","body":"b"}"# : try Self.push(for: folder.key, chat: "c-1")
        live.send(line)
        #expect(live.nextLine(timeout: 10) != nil, "no result while the input stays open")
        live.send(line)
        #expect(live.nextLine(timeout: 10) != nil)
        #expect(live.finish() == 0)
    }

    @Test("a closed pipe on standard output ends the run quietly, as cat does (| head -1)")
    func closedPipeIsQuiet() throws {
        let folder = try KeyFolder()
        let push = try Self.push(for: folder.key, chat: "c-1")
        let input = Data(String(repeating: push + "\n", count: 3_000).utf8)
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["decrypt", "--jsonl", "--key-file", folder.keyFile]
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        // Read one line, then close the reading end, as `head -1` does.
        var first: [UInt8] = []
        // The command stops reading once its output is closed: writing the rest of its input then
        // fails with EPIPE here, which must not end the test process.
        signal(SIGPIPE, SIG_IGN)
        let writer = Thread {
            let descriptor = stdin.fileHandleForWriting.fileDescriptor
            input.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0, errno == EINTR { continue }
                    if written <= 0 { break }
                    offset += written
                }
            }
            try? stdin.fileHandleForWriting.close()
        }
        writer.start()
        while true {
            var byte: UInt8 = 0
            let count = read(stdout.fileHandleForReading.fileDescriptor, &byte, 1)
            // A signal to this process (SIGCHLD from another test's child) interrupts the read;
            // that is not the end of the line (this read once ended the test with nothing read).
            if count < 0, errno == EINTR { continue }
            guard count == 1, byte != 0x0A else { break }
            first.append(byte)
        }
        try stdout.fileHandleForReading.close()
        process.waitUntilExit()
        let errors = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(try JSONValue(parsing: String(decoding: first, as: UTF8.self))["chat_id"] == "c-1")
        #expect(errors == "")
        #expect(process.terminationStatus == 0)
    }
}
