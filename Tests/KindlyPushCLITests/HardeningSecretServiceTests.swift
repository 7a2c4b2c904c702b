import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// Hostile input where a D-Bus session is needed: run under
/// tools/with-secret-service, which also installs what these tests run (dbus-run-session,
/// python3-dbus, python3-gi).
@Suite(
    "Hostile input with the Secret Service: refused with a reason, nothing left behind",
    .enabled(if: SecretServiceSession.isRunning, "no Secret Service: run under tools/with-secret-service"), .offThePool)
struct HardeningSecretServiceTests {
    static let badPaths = [
        "/org/freedesktop/secrets/collection/login/", "//", "/org//freedesktop", "/x-y", "/a b//c", "/a\n\u{1B}[31mkindly-push: ok: FAKE",
    ]

    @Test("a collection path that is not a D-Bus object path fails within 2 s, with no GLib text", arguments: badPaths)
    func badCollectionPath(_ path: String) throws {
        var environment = SecretServiceSession.environment
        environment["KINDLY_PUSH_SECRET_SERVICE_COLLECTION"] = path
        let push = try HardeningTests.sealed(for: DeviceKey.generate())
        let runs: [([String], String, Int32)] = [
            (["decrypt", "--keyring", "secret-service"], push, 4),
            (["decrypt"], push, 4),
            (["keys", "list", "--keyring", "secret-service"], "", 64),
            (["keys", "list"], "", 64),
            (["keygen", "--keyring", "secret-service"], "", 64),
            (["keygen"], "", 64),
        ]
        for (arguments, input, status) in runs {
            // A prompt would wait for ever: the cap (10 s) is reached only by a hang.
            let output = try CLI.run(arguments, stdin: input, environment: environment, timeLimit: 10)
            #expect(!output.timedOut, "\(arguments)")
            #expect(output.status == status, "\(arguments): \(output.stderr)")
            #expect(output.stdout == "")
            #expect(!output.stderr.contains("GLib"), "\(arguments): \(output.stderr)")
            #expect(output.stderr.filter { $0 == "\n" }.count == 1, "\(arguments): \(output.stderr)")
            let code = status == 4 ? "key_unavailable" : "usage"
            #expect(output.stderr.hasPrefix("kindly-push: \(code): "), "\(arguments): \(output.stderr)")
            #expect(output.stderr.contains("not a D-Bus object path"), "\(arguments): \(output.stderr)")
        }
        // In a stream every line says key_unavailable, and the run goes on.
        let stream = try CLI.run(
            ["decrypt", "--jsonl", "--keyring", "secret-service"], stdin: push + "\n" + push + "\n", environment: environment,
            timeLimit: 10)
        #expect(stream.status == 0)
        #expect(stream.stdout.split(separator: "\n").count == 2)
        #expect(stream.stdout.split(separator: "\n").allSatisfy { $0.contains(#""code":"key_unavailable""#) })
        #expect(!stream.stderr.contains("GLib"))
    }

    @Test("a D-Bus error message with a line break and an escape sequence is escaped: one printable line")
    func hostileDBusError() throws {
        let folder = try KeyFolder()
        let pushFile = folder.url.appendingPathComponent("push.json").path
        try Data(try HardeningTests.sealed(for: folder.key).utf8).write(to: URL(fileURLWithPath: pushFile))
        let ready = folder.url.appendingPathComponent("ready").path
        let errors = folder.url.appendingPathComponent("errors").path
        let address = folder.url.appendingPathComponent("address").path
        // A private session bus on which a fake Secret Service answers every call with that error.
        // SIGKILL at the end: a child of a Dispatch thread inherits its blocked signals, SIGTERM too.
        let script = """
            dbus-daemon --session --nofork --print-address=1 > "$6" 2>/dev/null & bus=$!
            i=0; while [ ! -s "$6" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
            DBUS_SESSION_BUS_ADDRESS=$(head -n 1 "$6"); export DBUS_SESSION_BUS_ADDRESS
            "$1" fail "$3" > "$4" & service=$!
            i=0; while [ ! -s "$4" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
            "$0" decrypt --keyring secret-service < "$2" 2> "$5"; status=$?
            kill -KILL $service $bus; exit $status
            """
        let output = try CLI.run(
            [
                "-c", script, CLI.binary.path, CLI.packageRoot.appendingPathComponent("tools/secret-service-control").path, pushFile,
                #"first line\n\x1b[31mkindly-push: ok: FAKE SECOND LINE\x1b[0m\x07"#, ready, errors, address,
            ], environment: ["PATH": "/usr/bin:/bin"], executable: URL(fileURLWithPath: "/bin/sh"), timeLimit: 30)
        #expect(output.status == 4)
        let stderr = try String(contentsOfFile: errors, encoding: .utf8)
        #expect(stderr.filter { $0 == "\n" }.count == 1, "\(stderr)")
        #expect(stderr.unicodeScalars.allSatisfy { $0 == "\n" || ($0.value >= 0x20 && $0.value != 0x7F) }, "\(stderr)")
        #expect(stderr.hasPrefix("kindly-push: key_unavailable: "), "\(stderr)")
        #expect(stderr.contains(#"first line\n\x1b[31mkindly-push: ok: FAKE SECOND LINE\x1b[0m\x07"#), "\(stderr)")
    }

    @Test("the bus daemon has this run's XDG folders, so a service it starts again never writes into the real home")
    func busDaemonEnvironment() throws {
        let dir = try #require(SecretServiceSession.variables["KINDLY_PUSH_TEST_SECRET_SERVICE_DIR"])
        var daemons = 0
        for entry in try FileManager.default.contentsOfDirectory(atPath: "/proc") where Int(entry) != nil {
            guard let command = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                String(decoding: command, as: UTF8.self).hasPrefix("dbus-daemon"),
                let environ = FileManager.default.contents(atPath: "/proc/\(entry)/environ")
            else { continue }
            let variables = Set(environ.split(separator: 0).map { String(decoding: $0, as: UTF8.self) })
            guard variables.contains("KINDLY_PUSH_TEST_SECRET_SERVICE_DIR=\(dir)") else { continue }
            daemons += 1
            #expect(variables.contains("XDG_DATA_HOME=\(dir)/data"), "dbus-daemon \(entry)")
            #expect(variables.contains("XDG_RUNTIME_DIR=\(dir)/runtime"), "dbus-daemon \(entry)")
        }
        #expect(daemons >= 1)
    }
}
