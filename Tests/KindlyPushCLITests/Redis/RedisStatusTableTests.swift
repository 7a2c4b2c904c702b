import Foundation
import Testing

@testable import KindlyPushRedis

@Suite("redis-status's table", .offThePool)
struct RedisStatusTableTests {
    /// Any client of the server names its consumer: an escape sequence (OSC title, colours), a
    /// carriage return that overwrites the line, a right-to-left override.
    @Test("names from the server reach the terminal escaped: no escape sequence, carriage return or bidirectional override")
    func hostileNamesEscaped() throws {
        let hostile = "w1\u{1B}]0;owned\u{07}\u{1B}[31m\rworker-9\u{202E}kcah\u{9B}2J"
        let status = RedisStatus(
            stream: "in\u{1B}[2J", length: 3, group: "g\r", lag: 1, pending: 2, lastDelivered: "1-0",
            consumers: [.init(name: hostile, pending: 2, idle: 1500), .init(name: "plain", pending: 0, idle: 5)],
            deadLetter: ("dead\u{202E}", 1))
        let table = status.text(json: false)
        for character in ["\u{1B}", "\r", "\u{07}", "\u{202E}", "\u{9B}"] {
            #expect(!table.contains(character), "\(table.debugDescription)")
        }
        #expect(table.contains(#"w1\x1b]0;owned\x07\x1b[31m\rworker-9\u{202e}kcah\u{9b}2J"#), "\(table)")
        #expect(table.contains(#"stream 'in\x1b[2J': 3 entries"#), "\(table)")
        #expect(table.contains(#"group 'g\r': lag 1"#), "\(table)")
        #expect(table.contains(#"dead letters 'dead\u{202e}': 1 entries"#), "\(table)")
        // The columns line up on the escaped names.
        let rows = table.split(separator: "\n").filter { $0.hasPrefix("consumer") || $0.hasPrefix("w1") || $0.hasPrefix("plain") }
        #expect(Set(rows.map { $0.count }).count == 1, "\(rows)")
        // --json was right already: JSON's own escapes.
        let json = status.text(json: true)
        #expect(!json.contains("\u{1B}") && !json.contains("\r"), "\(json.debugDescription)")
    }
}
