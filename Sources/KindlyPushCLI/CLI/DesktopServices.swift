package import KindlyPushBase
internal import KindlyPushCore

/// What only `kindly-push-desktop` (and `kindly-push-redis`) can do, because it links libsecret:
/// the Secret Service keyring.
///
/// `kindly-push` itself links none of libsecret, GIO and SQLite, so that a one-shot
/// `decrypt --key-file` starts as fast as a program that prints a line. When a
/// command needs them (see ``Command/needsDesktop(_:environment:)``), its ``CommandTable`` hands
/// the run to `kindly-push-desktop` (``SiblingBinary/desktop``), whose table links these services.
package protocol DesktopServices: Sendable {
    /// The Secret Service keyring for `--keyring secret-service`.
    func secretServiceKeyring(environment: CommandEnvironment, for purpose: KeyringChoice.Purpose) throws(CodedError) -> any Keyring
    /// The keyring of `--keyring auto`: the Secret Service when the session bus answers and
    /// offers it, the file keyring otherwise.
    func autoKeyring(environment: CommandEnvironment, for purpose: KeyringChoice.Purpose) throws(CodedError) -> any Keyring
}
