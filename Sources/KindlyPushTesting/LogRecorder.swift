public import KindlyPush
internal import KindlyPushCore

/// Collects what the library logs, so that a test can check a log line was (or was not) written.
///
/// ```swift
/// let recorder = LogRecorder()
/// let handler = KindlyNotificationHandler(decryption: decryption, logger: recorder.logger)
/// #expect(recorder.messages.contains { $0.contains("dropped") })
/// ```
public final class LogRecorder: Sendable {
    /// One recorded line.
    public struct Entry: Sendable, Equatable {
        /// The level it was logged at.
        public let level: KindlyLogLevel
        /// The message text.
        public let message: String
    }

    private let lines = Locked<[Entry]>([])

    /// An empty recorder.
    public init() {}

    /// A logger that appends every line to this recorder.
    public var logger: KindlyLogger {
        KindlyLogger { level, message in self.lines.withLock { $0.append(Entry(level: level, message: message)) } }
    }

    /// Every line so far, in order.
    public var entries: [Entry] { lines.withLock { $0 } }

    /// The messages of every line so far, in order.
    public var messages: [String] { entries.map(\.message) }
}
