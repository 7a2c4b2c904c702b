import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// The store and the banner text of notify, through the real binary against dunst: a forged copy
/// first, no HOME, hostile text, parallel runs of one chat, keyed digests. Each of these failed
/// with the 0.2.0 binary (KINDLY_PUSH_BINARY pointed at a build of a2b2f6e).
@Suite(
    "notify hardening",
    .serialized, .enabled(if: DesktopSession.isRunning, "no notification server: run under tools/with-desktop"), .offThePool)
struct NotifyHardeningTests {
    let keys: KeyFolder
    let marker = "H\(UInt32.random(in: 0...UInt32.max))"
    var state: String { keys.url.appendingPathComponent("state/state.sqlite3").path }

    init() throws {
        keys = try KeyFolder()
    }

    func push(chat: String, title: String, body: String = "B", messageID: String? = nil) throws -> String {
        let payload = try DecryptedPayload(chatId: chat, title: title, body: body, messageId: messageID)
        return String(decoding: try KindlyPushSealer.seal(payload, for: keys.key.publicKey), as: UTF8.self)
    }

    func notify(_ push: String, _ extra: [String] = []) throws -> CLI.Output {
        try CLI.run(
            ["notify", "--key-file", keys.keyFile, "--state", state] + extra, stdin: push, environment: DesktopSession.environment,
            timeLimit: 20)
    }

    /// `push` with one character of its ciphertext changed: kid and nonce stay.
    static func forged(_ push: String) throws -> String {
        var object = try #require(try JSONValue(parsing: push).objectValue)
        var kindly = try #require(object["kindly"]?.objectValue)
        var text = Array(try #require(kindly["ct"]?.stringValue).utf8)
        text[4] = text[4] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        kindly["ct"] = .string(String(decoding: text, as: UTF8.self))
        object["kindly"] = .object(kindly)
        return String(decoding: JSONWriter.compactBytes(.object(object)), as: UTF8.self)
    }

    @Test("a forged copy delivered first shows a placeholder; the genuine push, after it, replaces it with its banner")
    func forgeryDoesNotClaimTheMessage() async throws {
        try await DesktopSession.exclusive {
            let genuine = try push(chat: "c-\(marker)", title: "Genuine \(marker)")
            let copy = try Self.forged(genuine).replacingOccurrences(of: "New message", with: "Placeholder \(marker)")
            let first = try notify(copy, ["--verbose"])
            #expect(first.status == 0 && first.stderr.contains("placeholder shown"), "\(first.stderr)")
            let second = try notify(genuine, ["--verbose"])
            #expect(second.status == 0 && second.stderr.contains("banner shown"), "\(second.stderr)")
            // The banner took the placeholder's place: one notification, the genuine one.
            #expect(try DesktopSession.shown(marker).map(\.summary) == ["Genuine \(marker)"])
            // The genuine push again is a duplicate; the forged copy again too.
            #expect(try notify(genuine, ["--verbose"]).stderr.contains("already shown"))
            #expect(try notify(copy, ["--verbose"]).stderr.contains("already shown"))
        }
    }

    @Test("with HOME unset or empty, no store is made under the current directory; the push is still shown")
    func noHome() async throws {
        try await DesktopSession.exclusive {
            for home in ["-u", "HOME="] {
                let folder = keys.url.appendingPathComponent("cwd-\(home.count)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                let unset = home == "-u" ? ["-u", "HOME"] : ["HOME="]
                let output = try CLI.run(
                    ["-C", folder.path, "-u", "XDG_STATE_HOME"] + unset + [CLI.binary.path, "notify", "--key-file", keys.keyFile],
                    stdin: Array(try push(chat: "c", title: "Homeless \(marker)").utf8), environment: DesktopSession.environment,
                    executable: URL(fileURLWithPath: "/usr/bin/env"), timeLimit: 20)
                #expect(output.status == 0, "\(output.stderr)")
                #expect(output.stderr.contains("HOME is not set"), "\(output.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [])
            }
            #expect(try DesktopSession.shown(marker).count == 2)
        }
    }

    @Test(
        "NUL, escape sequences, C0/C1 controls and bidi overrides never reach the server; such a chat id is not handed to --on-open"
    )
    func cleanText() async throws {
        try await DesktopSession.exclusive {
            let title = "A\u{0}B\u{1B}[31mC\u{7}\u{85}D\u{202E}E\u{2066}F \(marker)"
            let body = "one\u{0}two\u{1B}]0;title\u{7}three\nfour"
            let record = keys.url.appendingPathComponent("opened").path
            var environment = DesktopSession.environment
            environment["RECORD"] = record
            let run = try RunningCLI(
                [
                    "notify", "--key-file", keys.keyFile, "--state", state, "--wait", "30", "--on-open",
                    #"printf '[%s]' "${KINDLY_CHAT_ID-unset}" > "$RECORD""#,
                ], environment: environment)
            run.write(try push(chat: "chat\u{0}evil", title: title, body: body))
            run.closeInput()
            try #require(try DesktopSession.waitUntilDisplayed(1), "\(run.stderr)")
            try DesktopSession.click()
            #expect(run.finish() == 0, "\(run.stderr)")
            let shown = try DesktopSession.shown(marker)
            try #require(shown.count == 1, "\(shown)")
            #expect(shown[0].summary == "ABCDEF \(marker)")
            #expect(shown[0].body == "onetwothree\nfour")
            #expect(try String(contentsOfFile: record, encoding: .utf8) == "[unset]")
        }
    }

    @Test("twenty parallel runs of one chat leave one banner")
    func oneBannerUnderConcurrency() async throws {
        try await DesktopSession.exclusive {
            let pushes = try (0..<20).map { try push(chat: "one-\(marker)", title: "Par \(marker)", body: "b\($0)", messageID: "m\($0)") }
            // The store exists before the race (the first open is not what is tested).
            _ = try notify(try push(chat: "warm", title: "Warm \(marker)"))
            let runs = try pushes.map { _ in
                try RunningCLI(["notify", "--key-file", keys.keyFile, "--state", state], environment: DesktopSession.environment)
            }
            for (run, sealed) in zip(runs, pushes) {
                run.write(sealed)
                run.closeInput()
            }
            for run in runs { #expect(run.finish(seconds: 60) == 0, "\(run.stderr)") }
            #expect(try DesktopSession.shown("Par \(marker)").count == 1)
        }
    }

    @Test("the store keys its digests with its own secret (0600 beside it): a guessable chat id cannot be found in it")
    func keyedStore() async throws {
        try await DesktopSession.exclusive {
            #expect(try notify(try push(chat: "c-1", title: "Keyed \(marker)", messageID: "m-1")).status == 0)
            // The 0.2.0 store's digest of chat id c-1, computable by anybody.
            var input = Array("kindly-push/chat/v1".utf8)
            var length = UInt32(3).bigEndian
            withUnsafeBytes(of: &length) { input.append(contentsOf: $0) }
            input += Array("c-1".utf8)
            let digest = Data(input.withUnsafeBytes { BLAKE2b.hash($0, outputLength: 32) })
            let folder = keys.url.appendingPathComponent("state").path
            for file in try FileManager.default.contentsOfDirectory(atPath: folder) {
                #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + file)).range(of: digest) == nil, "\(file)")
            }
            var status = stat()
            #expect(stat(state + ".key", &status) == 0 && status.st_mode & 0o777 == 0o600)
        }
    }
}
