import Foundation
import KindlyPushDesktop
import Testing

/// The agent's D-Bus service on a bus of the test's own, its calls taken by the test.
@Suite("the agent's D-Bus service bounds what it keeps", .offThePool)
struct AgentServiceBoundsTests {
    @Test(
        "a chat id over 4096 bytes is refused with InvalidArgs and not kept; 64 calls wait at most, the next is refused with LimitsExceeded until the agent takes them"
    )
    func bounds() throws {
        let bus = try TestBus()
        let service = try AgentService(busAddress: bus.address)
        func setAppState(_ chat: String) throws -> CLI.Output {
            try CLI.run(
                [
                    "gdbus", "call", "--address", bus.address, "--dest", AgentService.busName, "--object-path", "/ai/kindly/Push1",
                    "--method", "ai.kindly.Push1.SetAppState", "foreground", chat,
                ], executable: URL(fileURLWithPath: "/usr/bin/env"))
        }
        #expect(AgentService.maximumChatIDBytes == 4096 && AgentService.maximumQueuedCalls == 64)
        let long = try setAppState(String(repeating: "c", count: 4097))
        #expect(long.status != 0)
        #expect(long.stderr.contains("org.freedesktop.DBus.Error.InvalidArgs: chat_id is over 4096 bytes"), "\(long.stderr)")
        #expect(service.takeCalls().isEmpty)
        let longest = String(repeating: "c", count: 4096)
        #expect(try setAppState(longest).status == 0)
        #expect(service.takeCalls() == [.setAppState(.foreground, chatOnScreen: longest)])
        for index in 0..<64 {
            let queued = try setAppState("c-\(index)")
            try #require(queued.status == 0, "call \(index): \(queued.stderr)")
        }
        let refused = try setAppState("c-64")
        #expect(refused.status != 0)
        #expect(
            refused.stderr.contains("org.freedesktop.DBus.Error.LimitsExceeded: 64 calls wait for the agent already"), "\(refused.stderr)")
        #expect(service.takeCalls() == (0..<64).map { .setAppState(.foreground, chatOnScreen: "c-\($0)") })
        #expect(try setAppState("after").status == 0)
        #expect(service.takeCalls() == [.setAppState(.foreground, chatOnScreen: "after")])
    }
}
