import Dispatch
import KindlyPushBase
import KindlyPushCore
import KindlyPushTesting
import Testing

/// Where a delegate is asked: the main actor, reached from any thread, or (when it does not
/// answer) not at all, with an error. The main-actor delegate as the iOS SDK's push guide writes
/// it is `MainActorScreen` (IOSPortingTests).
@Suite("Asking the delegate where it can answer", .offThePool)
struct DelegateQuestionTests {
    /// Holds the main actor with a job that waits until the returned semaphore is signalled: the
    /// main actor cannot answer until then. Returns once the job runs.
    static func holdTheMainActor() async throws -> DispatchSemaphore {
        let release = DispatchSemaphore(value: 0)
        let holding = Recorder<Bool>()
        DispatchQueue.main.async {
            holding.record(true)
            release.wait()
        }
        await holding.wait(forCount: 1, timeout: hangCap)
        try #require(holding.all == [true], "the main actor never ran the holding job")
        return release
    }

    @Test("a main-actor delegate whose main actor does not answer: the push is allowed after the wait, an error says what to do")
    func mainActorThatDoesNotAnswer() async throws {
        let screen = await MainActor.run { MainActorScreen() }
        let release = try await Self.holdTheMainActor()
        let log = LogRecorder()
        let notification = ExternalNotification(id: "c-1", title: "Anna", body: "Lunch?", userInfo: [:])
        let answer = await Task.detached {
            DelegateQuestion.ask(screen, notification, logger: log.logger, wait: .milliseconds(50))
        }.value
        release.signal()
        #expect(answer == true)
        #expect(log.entries.map(\.level) == [.error])
        #expect(log.messages.first?.contains("asked on the main actor, which did not answer within 0.05 seconds") == true)
        #expect(log.messages.first?.contains("ClosureNotificationDelegate") == true)
        // Released, the main actor answers again.
        let asked = await MainActor.run { screen.askedOnMainThread }
        #expect(asked.allSatisfy { $0 })
    }

    @Test("a closure delegate is asked on the thread that delivered the push, with the main actor held")
    func closureDelegateNeedsNoMainActor() async throws {
        let release = try await Self.holdTheMainActor()
        let onMain = Recorder<Bool>()
        let delegate = ClosureNotificationDelegate { _ in
            onMain.record(DelegateQuestion.isOnMainActor)
            return false
        }
        let log = LogRecorder()
        let notification = ExternalNotification(id: "c-1", title: "Anna", body: "Lunch?", userInfo: [:])
        let answer = await Task.detached {
            DelegateQuestion.ask(delegate, notification, logger: log.logger, wait: .milliseconds(50))
        }.value
        release.signal()
        #expect(answer == false)
        #expect(onMain.all == [false])
        #expect(log.entries.isEmpty)
    }
}
