internal import KindlyPushBase
internal import KindlyPushCore

/// `kindly-push doctor`: why nothing decrypts here, one line per check.
///
/// Declared here, so that help, completions and the man page know it; `kindly-push-desktop`'s
/// table runs it by its implementation there (`DoctorRunner`), every other table hands it there.
package struct DoctorCommand: Command {
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
}
