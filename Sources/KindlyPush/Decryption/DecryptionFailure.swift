package import KindlyPushCore

/// Why a push did not decrypt: one of the reasons of wire format sections 5 and 7.3, with a detail
/// for people. The detail never contains key material or plaintext.
public struct DecryptionFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The reasons, in the order they are checked.
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        case notKindly
        case unsupportedVersion
        case malformed
        case keyUnavailable
        /// A version 2 push whose `sid` names no pinned sender key, or a version 1 push read in
        /// pinned mode (wire format section 7.3).
        case untrustedSender
        case authenticationFailed
        case badPlaintext
        /// A code this version does not know (read from a vector file or a newer peer).
        case unknown(String)

        /// Every known reason, in check order.
        public static let allKnown: [Reason] = [
            .notKindly, .unsupportedVersion, .malformed, .keyUnavailable, .untrustedSender, .authenticationFailed, .badPlaintext,
        ]

        /// The spec's code: `not_kindly`, `unsupported_version`, …
        public var code: String {
            switch self {
            case .notKindly: return "not_kindly"
            case .unsupportedVersion: return "unsupported_version"
            case .malformed: return "malformed"
            case .keyUnavailable: return "key_unavailable"
            case .untrustedSender: return "untrusted_sender"
            case .authenticationFailed: return "authentication_failed"
            case .badPlaintext: return "bad_plaintext"
            case .unknown(let code): return code
            }
        }

        /// The reason for `code`; unknown codes still parse.
        public init(code: String) {
            self = Reason.allKnown.first { $0.code == code } ?? .unknown(code)
        }

        public var description: String { code }
    }

    public let reason: Reason
    /// What exactly was wrong, for messages and logs.
    public let detail: String

    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(reason.code): \(detail)" }
}
