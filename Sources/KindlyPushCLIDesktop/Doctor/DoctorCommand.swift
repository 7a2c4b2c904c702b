internal import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore

/// `kindly-push doctor`: why nothing decrypts here, one line per check.
///
/// Declared and run in `kindly-push-desktop` (libsecret, GIO); every other binary hands it there.
/// Its checks are in this folder, its run in DoctorCommand+Run.swift.
package struct DoctorCommand: RunnableCommand {
    package static let name = "doctor"
    package static let abstract = "Check what decrypting needs here: keyring, session bus, Secret Service, key files, libraries."
    package static let examples = [
        Example("Check this machine", "kindly-push doctor")
    ]
    package static let discussion = """
        Prints one line per check: ok, warning or problem, what was found, and what to do.
        Exits 0 when there is no problem and 1 otherwise. Never prints a secret, never prompts,
        and waits at most 1.5 s for the session bus, the Secret Service and the notification server.
        """
    package static let keyring = KeyringOptions.keyring.taken
    package static let json = Flag("--json", "Print one JSON object per check: {\"check\", \"status\", \"message\", \"action\", ...}.")
    package static let help = SharedOptions.help.taken

    let choice: KeyringChoice
    let json: Bool
    let environment: CommandEnvironment
}
