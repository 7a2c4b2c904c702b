import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A worker's `--metrics` endpoint against clients that try to blind it: slow ones, idle ones,
/// many at once. Runs a real worker (`route --redis`) against the suite's redis-server.
@Suite("Metrics endpoint: no client can blind /healthz", .offThePool)
struct MetricsEndpointTests {
    /// A TCP connection to 127.0.0.1:`port` (closed when released).
    final class Connection {
        let descriptor: Int32

        init(port: Int) throws {
            descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard descriptor >= 0, connected == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            var limit = timeval(tv_sec: Int(hangCap.components.seconds), tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(descriptor) }

        func send(_ text: String) {
            _ = Array(text.utf8).withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }

        /// Everything until the server closes (or `hangCap` passes without a byte).
        func readAll() -> String {
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(descriptor, &chunk, chunk.count, 0)
                guard count > 0 else { break }
                received += chunk[0..<count]
            }
            return String(decoding: received, as: UTF8.self)
        }

        /// Whether the server has neither closed nor reset it: nothing to read yet.
        var isHeld: Bool {
            var byte: UInt8 = 0
            return recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT)) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
        }
    }

    /// A port that was free a moment ago.
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                guard bind(descriptor, $0, length) == 0, getsockname(descriptor, $0, &length) == 0 else { throw POSIXError(.EADDRINUSE) }
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A `route --redis` worker with `--metrics` on a free port, its endpoint's deadline
    /// `deadline` (the suite's hook), once its `/healthz` answers.
    static func worker(deadline: Duration) throws -> (process: Process, port: Int, keyFile: String) {
        let redis = try #require(WireParityTests.redis)
        let port = try freePort()
        let stream = "metrics:\(UUID().uuidString.prefix(8))"
        // A worker that looks keys up starts only with one (the folder goes with the test's).
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-metrics-\(UUID().uuidString).json").path
        let made = try CLI.run(["keygen", "--key-file", keyFile], stdin: "")
        try #require(made.status == 0, "\(made.stderr)")
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = [
            "route", "--app-state", "background", "--redis", "redis://127.0.0.1:\(redis.port)", "--from", stream + ":in", "--group", "g",
            "--to", stream + ":out", "--metrics", "127.0.0.1:\(port)", "--key-file", keyFile,
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["KINDLY_PUSH_REDIS_PASSWORD"] = redis.password
        environment["KINDLY_PUSH_TEST_METRICS_DEADLINE_MS"] = String(deadline.components.seconds * 1000)
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let started = ContinuousClock.now
        while ContinuousClock.now - started < hangCap {
            if let probe = try? Connection(port: port) {
                probe.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                if probe.readAll().hasPrefix("HTTP/1.1 200") { return (process, port, keyFile) }
            }
            usleep(50_000)
        }
        process.terminate()
        unlink(keyFile)
        throw POSIXError(.ETIMEDOUT)
    }

    @Test(
        "/healthz is answered while 50 slow and 50 idle connections are held against it, none of them dropped",
        .enabled(if: WireParityTests.redis != nil, "needs tools/with-redis"))
    func healthzAnsweredUnderSlowAndIdleClients() throws {
        // A deadline no held connection reaches during the test: the probe must be answered
        // while all hundred are open (a server that serves one at a time cannot).
        let (process, port, keyFile) = try Self.worker(deadline: .seconds(120))
        defer {
            process.terminate()
            process.waitUntilExit()
            unlink(keyFile)
        }
        let idle = try (0..<50).map { _ in try Connection(port: port) }
        let slow = try (0..<50).map { _ in try Connection(port: port) }
        for byte in ["G", "E", "T", " "] {
            for connection in slow { connection.send(byte) }
        }
        let asked = ContinuousClock.now
        let probe = try Connection(port: port)
        probe.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = probe.readAll()
        let took = ContinuousClock.now - asked
        // The body names the server the worker writes to.
        #expect(answer.hasPrefix("HTTP/1.1 200") && answer.contains("\r\n\r\nok: writing to "), "\(answer)")
        #expect(took < hangCap)
        print("/healthz answered in \(took) with 50 slow and 50 idle connections held")
        let held = (idle + slow).filter(\.isHeld).count
        #expect(held == 100, "the probe was answered only after \(100 - held) held connections were dropped")
        // And /metrics as well, to a client that asks with a query string.
        let metrics = try Connection(port: port)
        metrics.send("GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(metrics.readAll().contains("kindly_push_up 1"))
    }

    @Test(
        "a client that trickles its request, and one that sends nothing, are dropped at the request's deadline; other methods are refused",
        .enabled(if: WireParityTests.redis != nil, "needs tools/with-redis"))
    func deadlinePerRequest() throws {
        let (process, port, keyFile) = try Self.worker(deadline: .seconds(1))
        defer {
            process.terminate()
            process.waitUntilExit()
            unlink(keyFile)
        }
        let idle = try Connection(port: port)
        let slow = try Connection(port: port)
        let opened = ContinuousClock.now
        // A byte every 0.2 s: each read is quick, the request never ends.
        var sent = 0
        while slow.isHeld, ContinuousClock.now - opened < hangCap {
            slow.send("GET /metrics HTTP/1.1\r\n".dropFirst(sent % 20).prefix(1).description)
            sent += 1
            usleep(200_000)
        }
        #expect(!slow.isHeld, "a trickling client was never dropped")
        #expect(ContinuousClock.now - opened >= .seconds(1), "dropped before its deadline")
        #expect(idle.readAll().isEmpty && !idle.isHeld, "an idle client was never dropped")

        let post = try Connection(port: port)
        post.send("POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        #expect(post.readAll().hasPrefix("HTTP/1.1 405"))
    }
}
