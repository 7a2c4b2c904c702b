package import KindlyPushBase
internal import KindlyPushCore

/// The error codes and exit statuses of docs/spec/streams.md, in one place.
package enum ErrorCode: String, Sendable, CaseIterable {
    case notKindly = "not_kindly"
    case unsupportedVersion = "unsupported_version"
    case malformed
    case keyUnavailable = "key_unavailable"
    case untrustedSender = "untrusted_sender"
    case authenticationFailed = "authentication_failed"
    case badPlaintext = "bad_plaintext"
    case usage
    case badInput = "bad_input"
    case io

    package var exitStatus: Int32 {
        switch self {
        case .notKindly: return 1
        case .unsupportedVersion: return 2
        case .malformed: return 3
        case .keyUnavailable: return 4
        case .untrustedSender: return 7
        case .authenticationFailed: return 5
        case .badPlaintext: return 6
        case .usage: return 64
        case .badInput: return 65
        case .io: return 74
        }
    }

    /// The CLI code for a decryption reason.
    package init(_ reason: DecryptionFailure.Reason) {
        switch reason {
        case .notKindly: self = .notKindly
        case .unsupportedVersion: self = .unsupportedVersion
        case .malformed: self = .malformed
        case .keyUnavailable: self = .keyUnavailable
        case .untrustedSender: self = .untrustedSender
        case .authenticationFailed: self = .authenticationFailed
        case .badPlaintext: self = .badPlaintext
        }
    }
}

/// A failure the command reports: `kindly-push: CODE: TEXT` on standard error, or an error
/// object on its line in `--jsonl` mode. The message never holds key material.
package struct CLIError: Error, Sendable {
    package let code: ErrorCode
    package let message: String

    package init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    package init(_ failure: DecryptionFailure) {
        self.init(ErrorCode(failure.reason), failure.detail)
    }

    /// The error object of a `--jsonl` output line.
    package var jsonObject: JSONValue {
        ["error": ["code": .string(code.rawValue), "message": .string(message)]]
    }
}

/// How a command that succeeded ended: `check` exits 1 for a push that is not Kindly's.
package enum Completion: Sendable {
    case success
    case notKindly

    package var exitStatus: Int32 { self == .success ? 0 : ErrorCode.notKindly.exitStatus }
}
