import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A name server on a loopback address of its own (UDP, port 53) that holds every query until
/// ``release()``, then answers each, and every later one, NXDOMAIN: a slow name server that the
/// test ends when it wants. glibc's resolver is pointed at it by a `resolv.conf` bind-mounted in
/// a mount namespace of the command's own (``command(_:)``), so nothing else on the machine
/// sees it.
final class HeldNameServer: @unchecked Sendable {
    // @unchecked: what the thread and the test share is behind `lock`.
    let address: String
    private let socket: Int32
    private let lock = NSLock()
    private var held: [(query: [UInt8], peer: sockaddr_in)] = []
    private var released = false
    private var stopped = false
    private var names: [String] = []
    private var thread: Thread?

    /// Whether the test can run a command with its own `resolv.conf`: root, for a mount namespace.
    static var canRedirect: Bool { geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") }

    init(address: String) throws {
        self.address = address
        socket = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var bound = sockaddr_in()
        bound.sin_family = sa_family_t(AF_INET)
        bound.sin_port = in_port_t(53).bigEndian
        inet_pton(AF_INET, address, &bound.sin_addr)
        let status = withUnsafePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var wait = timeval(tv_sec: 0, tv_usec: 100_000)
        guard socket >= 0, status == 0, setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size)) == 0
        else {
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        let thread = Thread { [self] in serve() }
        self.thread = thread
        thread.start()
    }

    /// The names asked so far, in order.
    var queried: [String] { lock.withLock { names } }

    /// Answers what is held, and from now on every query at once.
    func release() {
        lock.withLock {
            released = true
            for (query, peer) in held { answer(query, to: peer) }
            held = []
        }
    }

    func stop() {
        lock.withLock { stopped = true }
        while thread?.isFinished == false { usleep(10_000) }
        close(socket)
    }

    /// `arguments` as a command whose resolver asks this server alone: `unshare -m` with this
    /// server in a `resolv.conf` (`folder`) mounted over /etc/resolv.conf.
    func command(_ arguments: [String], folder: URL) throws -> [String] {
        let path = folder.appendingPathComponent("resolv.conf").path
        try "nameserver \(address)\noptions timeout:30 attempts:1\n".write(toFile: path, atomically: true, encoding: .utf8)
        return ["-m", "/bin/sh", "-c", "mount --bind \"$0\" /etc/resolv.conf && exec \"$@\"", path] + arguments
    }

    private func serve() {
        var buffer = [UInt8](repeating: 0, count: 1500)
        while !lock.withLock({ stopped }) {
            var peer = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let count = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(socket, &buffer, buffer.count, 0, $0, &length) }
            }
            guard count > 12 else { continue }
            let query = Array(buffer[0..<count])
            lock.withLock {
                names.append(Self.name(in: query))
                if released { answer(query, to: peer) } else { held.append((query, peer)) }
            }
        }
    }

    /// The query's first name, as dotted text.
    private static func name(in query: [UInt8]) -> String {
        var labels: [String] = []
        var index = 12
        while index < query.count, query[index] != 0, index + 1 + Int(query[index]) <= query.count {
            labels.append(String(decoding: query[(index + 1)..<(index + 1 + Int(query[index]))], as: UTF8.self))
            index += 1 + Int(query[index])
        }
        return labels.joined(separator: ".")
    }

    /// NXDOMAIN for `query`: its id and question, no records.
    private func answer(_ query: [UInt8], to peer: sockaddr_in) {
        var end = 12
        while end < query.count, query[end] != 0 { end += 1 + Int(query[end]) }
        end = min(query.count, end + 5)  // the root label, QTYPE and QCLASS
        var response = Array(query[0..<end])
        response[2] = 0x80 | (query[2] & 0x01)  // a response; recursion desired as asked
        response[3] = 0x83  // recursion available; NXDOMAIN
        for index in 4..<12 { response[index] = 0 }
        response[5] = 1  // one question
        var peer = peer
        _ = withUnsafePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(socket, response, response.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
}
