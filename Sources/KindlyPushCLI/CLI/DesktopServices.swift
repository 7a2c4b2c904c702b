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

/// A command that only `kindly-push-desktop` runs (`notify`, `doctor`): declared in this
/// library, so that help, completions and the man page know it; `kindly-push-desktop`'s table
/// runs its implementation (a ``CommandImplementation``), every other table hands it to that
/// binary. The declaration itself never runs.
package protocol DesktopOnlyCommand: Command {}

extension DesktopOnlyCommand {
    /// Always: every table but `kindly-push-desktop`'s (and `kindly-push-redis`'s) hands it there.
    package static func needsDesktop(_ arguments: ParsedArguments, environment: CommandEnvironment) -> Bool { true }
}
