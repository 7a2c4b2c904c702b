import Foundation
import KindlyPush
import KindlyPushCore
import Testing

@Suite("kindly-push --jsonl", .offThePool)
struct JSONLinesTests {
    /// What one input line must give: a payload's chat id, or an error code.
    enum Expected: Equatable {
        case chat(String)
        case error(String)
    }

    @Test("10,000 lines with bad ones mixed in give one output line each, in order, with 1, 2 and 4 jobs")
    func longStream() throws {
        // One input for the three runs: sealing it is most of the test's work.
        let folder = try KeyFolder()
        let other = DeviceKey.generate()
        var input: [UInt8] = []
        var expected: [Expected] = []
        var generator = SystemRandomNumberGenerator()
        for index in 0..<10_000 {
            let line: [UInt8]
            switch index % 10 {
            case 3:
                line = Array("not json".utf8)
                expected.append(.error("bad_input"))
            case 5:
                line = []
                expected.append(.error("bad_input"))
            case 7:
                line = Array(#"{"kindly":{"v":4}}"#.utf8)
                expected.append(.error("unsupported_version"))
            case 8:
                line = try KindlyPushSealer.seal(try DecryptedPayload(chatId: "x\(index)", title: "t", body: "b"), for: other.publicKey)
                expected.append(.error("key_unavailable"))
            case 9 where index % 1000 == 999:
                line = Array(("{\"pad\":\"" + String(repeating: "y", count: 70_000) + "\"}").utf8)
                expected.append(.error("bad_input"))
            default:
                let body = String(repeating: "é", count: Int.random(in: 0...200, using: &generator))
                line = try KindlyPushSealer.seal(
                    try DecryptedPayload(chatId: "c\(index)", title: "t", body: body), for: folder.key.publicKey)
                expected.append(.chat("c\(index)"))
            }
            input += line + [0x0A]
        }
        // The run ends by saying how many lines failed, by code (docs/spec/streams.md: the exit status is 0).
        let failed = expected.compactMap { if case .error(let code) = $0 { code } else { nil } }
        let byCode = ["unsupported_version", "key_unavailable", "bad_input"].map { code in
            "\(failed.filter { $0 == code }.count) \(code)"
        }
        for jobs in [1, 2, 4] {
            let output = try CLI.run(["decrypt", "--jsonl", "--jobs", "\(jobs)", "--key-file", folder.keyFile], stdin: input)
            #expect(output.status == 0, "jobs \(jobs)")
            #expect(
                output.stderr
                    == "kindly-push: \(failed.count) of 10000 lines failed (\(byCode.joined(separator: ", "))); each has its error line in the output\n",
                "jobs \(jobs)")
            let lines = output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            #expect(lines.count == expected.count, "jobs \(jobs)")
            // The first line that differs, if any (one expectation, not one per line).
            let mismatch = zip(lines, expected).enumerated().first { _, pair in
                let value = try? JSONValue(parsing: String(pair.0))
                let got: Expected =
                    if let code = value?["error"]?["code"]?.stringValue { .error(code) } else {
                        .chat(value?["chat_id"]?.stringValue ?? "?")
                    }
                return got != pair.1
            }
            #expect(
                mismatch == nil,
                "jobs \(jobs), line \((mismatch?.offset ?? 0) + 1): \(mismatch.map { String($0.element.0.prefix(200)) } ?? "")")
        }
    }

    @Test("--summary counts what became of each line, not what its output looks like: a push whose own \"error\" member comes first is ok")
    func summaryCountsOutcomes() throws {
        let folder = try KeyFolder()
        let push = try KindlyPushSealer.seal(try DecryptedPayload(chatId: "c", title: "t", body: "b"), for: folder.key.publicKey)
        // --apply prints the whole document, members in their order: this line's output begins
        // as an error object does.
        let lookAlike = Array(#"{"error":{"code":"not_an_error"},"#.utf8) + push.dropFirst()
        let input = lookAlike + [0x0A] + push + [0x0A] + Array("not json\n".utf8)
        let output = try CLI.run(["decrypt", "--apply", "--jsonl", "--summary", "--key-file", folder.keyFile], stdin: input)
        #expect(output.status == 0)
        #expect(output.stdout.hasPrefix(#"{"error":{"code":"not_an_error"},"aps":{"alert":{"title":"t""#))
        #expect(output.stderr == "kindly-push: summary: 3 lines: 2 ok, 1 bad_input\n", "\(output.stderr)")
    }

    @Test("a line of megabytes is bad_input, the lines around it go through, and seal takes the same way", arguments: [1, 2])
    func hugeLine(_ jobs: Int) throws {
        let huge = "{\"chat_id\":\"" + String(repeating: "z", count: 5_000_000) + "\",\"title\":\"t\",\"body\":\"b\"}"
        let good = #"{"chat_id":"c","title":"t","body":"b"}"#
        let input = [good, huge, good, String(repeating: " ", count: 65_537), good].joined(separator: "\n")
        let output = try CLI.run(
            ["seal", "--jsonl", "--jobs", "\(jobs)", "--public-key", DeviceKey.generate().publicKey.base64URL], stdin: input)
        #expect(output.status == 0)
        let lines = output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        #expect(lines.count == 5)
        for index in [0, 2, 4] { #expect(lines[index].hasPrefix(#"{"aps":{"alert":"#), "line \(index + 1)") }
        for index in [1, 3] {
            #expect(lines[index] == #"{"error":{"code":"bad_input","message":"the line is over 64 KiB"}}"#, "line \(index + 1)")
        }
    }

    @Test("every input line counts, a final one without a newline too, but the input's last newline starts none")
    func lineCounting() throws {
        let cases: [(String, [String])] = [
            ("", []),
            ("\n", ["bad_input"]),
            ("{}", ["false"]),
            ("{}\n", ["false"]),
            ("{}\n\n{}", ["false", "bad_input", "false"]),
            ("{\"kindly\":{}}\r\n \t\n[]\n", ["true", "bad_input", "bad_input"]),
        ]
        for (input, expected) in cases {
            let output = try CLI.run(["check", "--jsonl"], stdin: input)
            #expect(output.status == 0)
            let results = try output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { line -> String in
                let value = try JSONValue(parsing: String(line))
                if let code = value["error"]?["code"]?.stringValue { return code }
                switch value["kindly"] {
                case true?: return "true"
                case false?: return "false"
                default: return "neither an error nor a check result: \(line)"
                }
            }
            #expect(results == expected, "input \(input.debugDescription)")
            #expect(output.stdout.isEmpty || output.stdout.hasSuffix("\n"))
        }
    }

    @Test("seal --jsonl seals each line and reports bad plaintexts in place")
    func sealLines() throws {
        let folder = try KeyFolder()
        let input = """
            {"chat_id":"a","title":"t","body":"b"}
            {"chat_id":"","title":"t","body":"b"}
            {"chat_id":"c","title":"t","body":"b"}
            """
        let sealed = try CLI.run(["seal", "--jsonl", "--public-key", folder.key.publicKey.base64URL], stdin: input)
        let lines = sealed.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[1] == #"{"error":{"code":"bad_input","message":"the plaintext is not a Kindly message: \"chat_id\" is empty"}}"#)
        let decrypted = try CLI.run(["decrypt", "--jsonl", "--key-file", folder.keyFile], stdin: lines.joined(separator: "\n"))
        let expected = [
            #"{"chat_id":"a","title":"t","body":"b"}"#,
            #"{"error":{"code":"not_kindly","message":"no \"kindly\" object at the top level"}}"#,
            #"{"chat_id":"c","title":"t","body":"b"}"#,
        ]
        #expect(decrypted.stdout.split(separator: "\n").map(String.init) == expected)
    }
}
