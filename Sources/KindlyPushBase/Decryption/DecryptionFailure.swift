internal import KindlyPushCore

/// Why a push did not decrypt: one of the reasons of docs/spec/wire-format.md sections 5 and 7.3, with a
/// detail for people and, for `key_unavailable`, the keyring's own typed error.
///
/// The detail never contains key material or plaintext. `description` (and, with Foundation,
/// `localizedDescription`) is the one line the `kindly-push` command prints after its name:
/// `key_unavailable: no key with kid … is stored`.
///
/// ```swift
/// switch decryption.decryptResult(userInfo: userInfo) {
/// case .success(let payload): show(payload)
/// case .failure(let failure) where failure.keyringError?.isTransient == true: retryLater()
/// case .failure(let failure): log(failure.reason.code)
/// }
/// ```
public struct DecryptionFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The reasons of docs/spec/wire-format.md sections 5 and 7.3, in the order they are checked. Exactly the spec's
    /// cases: an exhaustive `switch` needs no default.
    public enum Reason: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// 1. `isKindlyNotification` is false: the push is another provider's.
        case notKindly = "not_kindly"
        /// 2. `v` is missing or is not a supported version.
        case unsupportedVersion = "unsupported_version"
        /// 3. An envelope field is missing, not a string, not canonical base64, or of the wrong length.
        case malformed
        /// 4. No secret key with the push's `kid` can be read now (see ``DecryptionFailure/keyringError``).
        case keyUnavailable = "key_unavailable"
        /// 5. A version 2 push whose `sid` names no pinned sender key, or a version 1 push read
        /// in pinned mode (docs/spec/wire-format.md section 7.3).
        case untrustedSender = "untrusted_sender"
        /// 6. A shared secret is all zeros or the AEAD tag does not verify.
        case authenticationFailed = "authentication_failed"
        /// 7. The padding or the plaintext breaks docs/spec/wire-format.md section 4.
        case badPlaintext = "bad_plaintext"

        /// The spec's code: `not_kindly`, `unsupported_version`, …
        public var code: String { rawValue }

        /// The reason whose spec code is `code`, or `nil` for a code this version does not know
        /// (a newer peer's, or a typo in a vector file).
        public init?(code: String) {
            self.init(rawValue: code)
        }

        /// The spec's code.
        public var description: String { code }
    }

    /// Which check failed.
    public let reason: Reason
    /// What exactly was wrong, for messages and logs.
    public let detail: String
    /// For ``Reason/keyUnavailable``: what the keyring answered (not found, locked, unreachable,
    /// I/O), so that a caller retries only what is worth retrying. `nil` for every other reason.
    public let keyringError: KeyringError?

    /// A failure for `reason` with a detail for people.
    ///
    /// - Parameters:
    ///   - reason: the check that failed.
    ///   - detail: what exactly was wrong; never key material or plaintext.
    ///   - keyringError: the keyring's error, for ``Reason/keyUnavailable``.
    public init(_ reason: Reason, _ detail: String, keyringError: KeyringError? = nil) {
        self.reason = reason
        self.detail = detail
        self.keyringError = keyringError
    }

    /// `CODE: DETAIL`, the line the command prints after `kindly-push: `.
    public var description: String { "\(reason.code): \(detail)" }
}
