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
