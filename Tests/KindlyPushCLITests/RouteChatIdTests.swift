import Foundation
import KindlyPush
import KindlyPushCore
import Testing

@Suite("route --screen chat --chat-id", .offThePool)
struct RouteChatIdTests {
    @Test("a decrypted push for another chat than the one on screen is routed as on the other screen")
    func chatId() throws {
        let keys = try KeyFolder()
        let sealed = String(
            decoding: try KindlyPushSealer.seal(try DecryptedPayload(chatId: "c-2", title: "t", body: "b"), for: keys.key.publicKey),
            as: UTF8.self)
        func route(_ extra: [String]) throws -> String {
            let output = try CLI.run(["route", "--key-file", keys.keyFile, "--app-state", "foreground"] + extra, stdin: sealed)
            #expect(output.status == 0, "\(output.stderr)")
            return (try JSONValue(parsing: output.stdout))["presentation"]?.stringValue ?? ""
        }
        #expect(try route(["--screen", "chat"]) == "none")
        #expect(try route(["--screen", "chat", "--chat-id", "c-1"]) == "banner")
        #expect(try route(["--screen", "chat", "--chat-id", "c-2"]) == "none")
        let misuse = try CLI.run(["route", "--key-file", keys.keyFile, "--app-state", "foreground", "--chat-id", "c-1"], stdin: sealed)
        #expect(misuse.status == 64 && misuse.stderr.contains("'--chat-id' needs '--screen chat'"), "\(misuse.stderr)")
    }
}
