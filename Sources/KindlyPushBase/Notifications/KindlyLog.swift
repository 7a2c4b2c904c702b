internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// How serious a log line is.
public enum KindlyLogLevel: String, Sendable, CaseIterable, Comparable {
    /// Detail for developers.
    case debug
    /// Something worth knowing that needs no action.
    case info
    /// Something went wrong and was handled (a placeholder shown, a tap dropped).
    case warning
    /// Something went wrong and was not handled.
    case error

    public static func < (lhs: KindlyLogLevel, rhs: KindlyLogLevel) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

/// Where the notification code writes its log lines: a `Sendable` closure, so that a host can
/// forward them to whatever logging it uses without the library depending on a logging package.
///
/// Lines never contain key material, ciphertext, or decrypted text: only what happened, and
/// codes such as a decryption failure's reason.
public struct KindlyLogger: Sendable {
    private let sink: @Sendable (KindlyLogLevel, String) -> Void

    /// A logger that hands every line to `sink`.
    public init(_ sink: @escaping @Sendable (KindlyLogLevel, String) -> Void) {
        self.sink = sink
    }

    /// Writes one line.
    public func log(_ level: KindlyLogLevel, _ message: String) {
        sink(level, message)
    }

    /// Discards everything.
    public static let disabled = KindlyLogger { _, _ in }

    /// The process's logger: what the notification types log to when they are not given one,
    /// read when each of them is made. Set it once, when the app starts, before making them
    /// (as swift-log's `LoggingSystem.bootstrap`); `KindlyLogger.default = .disabled` silences
    /// them, `.standardError()` sends their lines to standard error.
    ///
    /// Initially ``systemLog(minimum:)``: warnings and errors go to the system log, as the iOS
    /// SDK's lines go to the unified log (a dropped tap, a push that did not decrypt), and never to
    /// standard error, which is the host's.
    public static var `default`: KindlyLogger {
        get { processDefault.withLock { $0 } }
        set { processDefault.withLock { $0 = newValue } }
    }

    private static let processDefault = Locked(KindlyLogger.systemLog())

    /// Writes lines at `minimum` or above to the system log (`syslog(3)`, facility `user`; the
    /// systemd journal collects it: `journalctl --user -t APP`), each as
    /// `kindly-push: LEVEL: message` under the process's own name, with the level's syslog
    /// priority. The library never calls `openlog`, so the host's own syslog settings stay as they
    /// are. Where no syslog daemon listens (a container without one), the lines are lost.
    public static func systemLog(minimum: KindlyLogLevel = .warning) -> KindlyLogger {
        KindlyLogger { level, message in
            guard level >= minimum else { return }
            let priority: Int32
            switch level {
            case .debug: priority = LOG_DEBUG
            case .info: priority = LOG_INFO
            case .warning: priority = LOG_WARNING
            case .error: priority = LOG_ERR
            }
            // Through "%s": the message is data, never a format.
            "kindly-push: \(level.rawValue): \(message)".withCString { line in
                withVaList([line]) { vsyslog(priority | LOG_USER, "%s", $0) }
            }
        }
    }

    /// Writes lines at `minimum` or above to standard error as `kindly-push: LEVEL: message`.
    public static func standardError(minimum: KindlyLogLevel = .info) -> KindlyLogger {
        KindlyLogger { level, message in
            guard level >= minimum else { return }
            // One write call per line, so that lines from several threads do not interleave.
            let line = Array("kindly-push: \(level.rawValue): \(message)\n".utf8)
            _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        }
    }
}
