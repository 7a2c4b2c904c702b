import Foundation
import KindlyPushCore
import Testing

/// A Unix datagram socket the test binds, where a ``ServiceNotifier`` sends: a path in a fresh
/// folder, or an abstract name.
private final class NotifySocket {
    let descriptor: Int32
    /// What NOTIFY_SOCKET says to reach it.
    let name: String
    private let folder: String?

    init(abstract: Bool) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        precondition(descriptor >= 0, "socket failed")
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes: [UInt8]
        if abstract {
            folder = nil
            name = "@kindly-push-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            bytes = [0] + Array(name.utf8.dropFirst())
        } else {
            let made = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(UUID().uuidString.prefix(8))").path
            try FileManager.default.createDirectory(atPath: made, withIntermediateDirectories: false)
            folder = made
            name = made + "/notify"
            bytes = Array(name.utf8) + [0]
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sa_family_t>.size + bytes.count))
            }
        }
        precondition(bound == 0, "bind failed: \(Errno.current)")
    }

    /// Every datagram waiting, in order.
    func received() -> [String] {
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count >= 0 else { return messages }
            messages.append(String(decoding: buffer[0..<count], as: UTF8.self))
        }
    }

    deinit {
        close(descriptor)
        if let folder { try? FileManager.default.removeItem(atPath: folder) }
    }
}

@Suite("ServiceNotifier: sd_notify's datagrams to NOTIFY_SOCKET, and the watchdog's pace", .offThePool)
struct ServiceNotifierTests {
    private func notifier(_ environment: [String: String]) -> ServiceNotifier? {
        ServiceNotifier { environment[$0] }
    }

    @Test("no NOTIFY_SOCKET (or an empty one): no notifier; WATCHDOG_USEC is fed at half its interval, not for another WATCHDOG_PID")
    func environment() throws {
        #expect(notifier([:]) == nil)
        #expect(notifier(["NOTIFY_SOCKET": ""]) == nil)
        let plain = try #require(notifier(["NOTIFY_SOCKET": "/run/systemd/notify"]))
        #expect(plain.watchdogInterval == nil)
        #expect(notifier(["NOTIFY_SOCKET": "@n", "WATCHDOG_USEC": "30000000"])?.watchdogInterval == 15_000)
        #expect(notifier(["NOTIFY_SOCKET": "@n", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(getpid())"])?.watchdogInterval == 15_000)
        #expect(notifier(["NOTIFY_SOCKET": "@n", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(getpid() + 1)"])?.watchdogInterval == nil)
        #expect(notifier(["NOTIFY_SOCKET": "@n", "WATCHDOG_USEC": "0"])?.watchdogInterval == nil)
        #expect(notifier(["NOTIFY_SOCKET": "@n", "WATCHDOG_USEC": "soon"])?.watchdogInterval == nil)
    }

    @Test("a message is one datagram, to a path and to an abstract name (@…)")
    func sendsDatagrams() throws {
        for abstract in [false, true] {
            let socket = try NotifySocket(abstract: abstract)
            let sender = try #require(notifier(["NOTIFY_SOCKET": socket.name]))
            try sender.send("READY=1\nSTATUS=reading 'in'")
            try sender.send("STOPPING=1")
            #expect(socket.received() == ["READY=1\nSTATUS=reading 'in'", "STOPPING=1"], "\(socket.name)")
        }
    }

    @Test("a NOTIFY_SOCKET nobody listens on, a relative one and one too long are errors of the send, not of the notifier")
    func unusableSockets() throws {
        let folder = FileManager.default.temporaryDirectory.path
        #expect(throws: Errno.noSuchFileOrDirectory) {
            try notifier(["NOTIFY_SOCKET": "\(folder)/nobody-\(UUID().uuidString)"])?.send("READY=1")
        }
        #expect(throws: Errno(EINVAL)) { try notifier(["NOTIFY_SOCKET": "run/notify"])?.send("READY=1") }
        #expect(throws: Errno(EINVAL)) { try notifier(["NOTIFY_SOCKET": "/" + String(repeating: "a", count: 200)])?.send("READY=1") }
    }

    @Test("WATCHDOG=1 only while healthy, at most once per half interval, and at once when healthy again")
    func watchdogPace() throws {
        let socket = try NotifySocket(abstract: true)
        // A 20-minute watchdog: a second feed within its 10-minute half is never due.
        let sender = try #require(notifier(["NOTIFY_SOCKET": socket.name, "WATCHDOG_USEC": "1200000000"]))
        sender.feedWatchdog()
        #expect(socket.received().isEmpty, "not healthy yet")
        sender.setHealthy(true)
        sender.feedWatchdog()
        sender.feedWatchdog()
        #expect(socket.received() == ["WATCHDOG=1"])
        sender.setHealthy(false)
        sender.feedWatchdog()
        #expect(socket.received().isEmpty, "not healthy")
        sender.setHealthy(true)
        sender.feedWatchdog()
        #expect(socket.received() == ["WATCHDOG=1"], "healthy again: fed at once")
        let without = try #require(notifier(["NOTIFY_SOCKET": socket.name]))
        without.setHealthy(true)
        without.feedWatchdog()
        #expect(socket.received().isEmpty, "no WATCHDOG_USEC: never fed")
    }
}
