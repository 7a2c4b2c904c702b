import Foundation
import Testing

@testable import KindlyPushRedis

/// The workers' read script (``RedisScripts.read``) against the suite's redis-server: what
/// one call may make the server do.
@Suite("Redis read script: bounded work per call", .offThePool)
struct RedisReadScriptTests {
    /// `redis-cli` against the suite's server; `input` is its last argument when given (`-x`).
    static func redisCLI(_ arguments: [String], input: [UInt8]? = nil) throws -> String {
        let redis = try #require(WireParityTests.redis)
        let output = try CLI.run(
            ["-h", "127.0.0.1", "-p", redis.port, "--raw"] + (input == nil ? [] : ["-x"]) + arguments, stdin: input ?? [],
            environment: ["REDISCLI_AUTH": redis.password], executable: URL(fileURLWithPath: "/usr/bin/redis-cli"))
        #expect(output.status == 0, "redis-cli \(arguments.prefix(3)): \(output.stderr)")
        return output.stdout
    }

    @Test(
        "new entries are read one at a time until a batch of documents of the limit was read: huge entries come a few per call, never all at once",
        .enabled(if: WireParityTests.redis != nil, "needs tools/with-redis"))
    func hugeEntriesBoundTheRead() throws {
        let stream = "read-script:\(UUID().uuidString.prefix(8))"
        _ = try Self.redisCLI(["XGROUP", "CREATE", stream, "g", "0", "MKSTREAM"])
        defer { _ = try? Self.redisCLI(["DEL", stream]) }
        // small, small, 20 MB, small, small, 20 MB, small, small
        let huge = [UInt8](repeating: UInt8(ascii: "x"), count: 20 << 20)
        for index in 0..<8 {
            _ = try Self.redisCLI(["XADD", stream, "*", "doc"], input: index % 3 == 2 ? huge : Array("{\"n\":\(index)}".utf8))
        }
        func call() throws -> Int {
            _ = try Self.redisCLI([
                "EVAL", RedisScripts.read, "1", stream, "g", "c", "100", "65536", "5", "", "",
            ])
            let pending = try Self.redisCLI(["XPENDING", stream, "g"]).split(separator: "\n").first.map(String.init)
            return pending.flatMap { Int($0) } ?? -1
        }
        // A batch of 100 documents of 64 KiB is about 6.5 MB: the first 20 MB entry ends the call.
        #expect(try call() == 3, "the first call read past the first huge entry")
        #expect(try call() == 6)
        #expect(try call() == 8)
        #expect(try call() == 8)
    }
}
