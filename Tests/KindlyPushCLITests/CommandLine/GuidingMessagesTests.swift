import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// Messages that say what to do, through the real binary.
@Suite("kindly-push messages that say what to do", .offThePool)
struct GuidingMessagesTests {
    /// A device public key to seal for.
    static let sealingKey = DeviceKey.generate().publicKey.base64URL

    /// A push pretty-printed as `jq .` writes it: 17 lines.
    static let prettyPush = """
        {
          "aps": {
            "alert": {
              "title": "New message",
              "body": "Open the app to read it"
            },
            "mutable-content": 1
          },
          "kindly": {
            "v": 1,
            "kid": "AAAAAAAAAAA",
            "epk": "AAAA",
            "n": "AAAA",
            "ct": "AAAA",
            "m": "visible"
          }
        }

        """

    @Test(
        "a pretty-printed document in --jsonl: one output line per input line, the first naming jq -c, and one note on stderr",
        arguments: [
            ["decrypt", "--keyring", "file", "--jsonl"], ["check", "--jsonl", "--jobs", "1"],
            ["route", "--app-state", "background", "--jsonl", "--jobs", "2"], ["decrypt", "--keyring", "file", "--jsonl", "--apply"],
            // Every reader of a line knows it from the reading that failed (no line is
            // read twice): the sealers' fast paths too.
            ["seal", "--public-key", sealingKey, "--jsonl"], ["seal", "--recipients-inline", "--jsonl"],
        ])
    func prettyPrintedLines(_ arguments: [String]) throws {
        let output = try CLI.run(arguments, stdin: Self.prettyPush + Self.prettyPush)
        #expect(output.status == 0)
        let lines = output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        // docs/spec/streams.md: every input line gives one output line, each an error object here.
        #expect(lines.count == 34)
        #expect(lines.allSatisfy { $0.hasPrefix(#"{"error":{"code":"bad_input""#) })
        // The line that opens each document says what to do; the others keep their own error.
        let naming = lines.indices.filter { lines[$0].contains("jq -c") }
        #expect(naming == [0, 17])
        #expect(
            lines[0]
                == #"{"error":{"code":"bad_input","message":"a JSON document goes on past the end of its line, but --jsonl reads one document per line: compact pretty-printed JSON first, with jq -c"}}"#
        )
        // Standard error: one note for the run, however many documents, and the failures' count.
        #expect(
            output.stderr
                == "kindly-push: note: a JSON document goes on past the end of its line, but --jsonl reads one document per line: compact pretty-printed JSON first, with jq -c\n"
                + "kindly-push: 34 of 34 lines failed (34 bad_input); each has its error line in the output\n"
        )
        // A line cut short that does not begin a document keeps its own message, and no note.
        let cut = try CLI.run(arguments, stdin: "\"abc\n{\"a\":1}}\n")
        #expect(!cut.stdout.contains("jq -c"))
        #expect(cut.stderr == "kindly-push: 2 of 2 lines failed (2 bad_input); each has its error line in the output\n")
        // A compact document cut inside a string (a partial write: the file's last line, with
        // its newline or without) ends too early; it is not pretty-printed JSON.
        for ending in ["\n", ""] {
            let partial = try CLI.run(arguments, stdin: #"{"aps":{"alert":{"title":"Hel"# + ending)
            #expect(partial.status == 0)
            #expect(!partial.stdout.contains("jq -c"), "\(partial.stdout)")
            #expect(partial.stdout.contains("is not JSON: the document ends too early"), "\(partial.stdout)")
            #expect(partial.stderr == "kindly-push: 1 of 1 line failed (1 bad_input); each has its error line in the output\n")
        }
    }

    @Test("a key file that does not hold the push's key: the message names the file and both kids")
    func keyFileNamesBothKids() throws {
        let sealedFor = try KeyFolder()
        let other = try KeyFolder()
        let message = #"{"chat_id":"c-1","title":"Anna","body":"Hi!"}"#
        let sealed = try CLI.run(["seal", "--key-file", sealedFor.keyFile], stdin: message)
        #expect(sealed.status == 0)
        let expected =
            "the push is for kid \(sealedFor.key.kid.base64URL); \(other.keyFile) holds kid \(other.key.kid.base64URL)"
        let single = try CLI.run(["decrypt", "--key-file", other.keyFile], stdin: sealed.stdout)
        #expect(single.status == 4)
        #expect(single.stderr == "kindly-push: key_unavailable: \(expected)\n")
        for jobs in ["1", "2"] {
            let lines = try CLI.run(["decrypt", "--key-file", other.keyFile, "--jsonl", "--jobs", jobs], stdin: sealed.stdout)
            #expect(lines.stdout == #"{"error":{"code":"key_unavailable","message":"\#(expected)"}}"# + "\n")
        }
        // The library says the same to its own callers.
        let push = try JSONReader.parse(Array(sealed.stdout.utf8))
        let failure = KindlyPushDecryption(keyring: try KeyFileKeyring(path: other.keyFile)).decryptResult(userInfo: push)
        guard case .failure(let error) = failure else { throw CancellationError() }
        #expect(error.detail == expected)
        #expect(error.keyringError == .notFound(sealedFor.key.kid))
        guard case .failure(let withKey) = KindlyPushDecryption.decryptResult(userInfo: push, using: other.key) else {
            throw CancellationError()
        }
        #expect(withKey.detail == "the push is for kid \(sealedFor.key.kid.base64URL); the key given has kid \(other.key.kid.base64URL)")
    }

    @Test(
        "a near-miss short option gets a suggestion, as a misspelt long one does",
        arguments: [
            (["decrypt", "-k", "device.json"], "unknown option '-k'; did you mean '--key-file'? (see 'kindly-push decrypt --help')"),
            (["decrypt", "-k", "file"], "unknown option '-k'; did you mean '--keyring'? (see 'kindly-push decrypt --help')"),
            (["route", "-a", "background"], "unknown option '-a'; did you mean '--app-state'? (see 'kindly-push route --help')"),
            (["check", "-j"], "unknown option '-j'; did you mean '--jsonl' or '--jobs'? (see 'kindly-push check --help')"),
            (["check", "-jsonl"], "unknown option '-jsonl'; did you mean '--jsonl'? (see 'kindly-push check --help')"),
            (["seal", "-x"], "unknown option '-x' (see 'kindly-push seal --help')"),
        ] as [([String], String)])
    func shortOptions(_ arguments: [String], _ message: String) throws {
        let output = try CLI.run(arguments, stdin: "{}")
        #expect(output.status == 64)
        #expect(output.stdout == "")
        #expect(output.stderr == "kindly-push: usage: \(message)\n")
    }

    @Test("a value or a kid that begins with a dash is still a value")
    func dashValues() throws {
        // Not an option: a kid (refused as one), a value after its option, `-` for standard input.
        #expect(
            try CLI.run(["keys", "delete", "-AbCdEfGhIj"]).stderr
                == "kindly-push: usage: '-AbCdEfGhIj' is not a kid (8 bytes of base64url)\n")
        #expect(try CLI.run(["check", "-"], stdin: #"{"aps":{}}"#).stdout == #"{"kindly":false,"decrypted":false}"# + "\n")
        let sealed = try CLI.run(
            ["seal", "--public-key", DeviceKey.generate().publicKey.base64URL, "--placeholder-title", "-k"],
            stdin: #"{"chat_id":"c","title":"t","body":"b"}"#)
        #expect(sealed.status == 0, "\(sealed.stderr)")
    }

    @Test("standard input that is not a terminal gets no note")
    func noNoteWithoutTerminal() throws {
        let output = try CLI.run(["check"], stdin: #"{"aps":{}}"#)
        #expect(output.stderr == "")
    }
}
