package import KindlyPushBase
internal import KindlyPushCore

/// `kindly-push vapid-keygen --key-file PATH`: the backend's VAPID key for Web Push
/// (docs/spec/wire-format.md section 9.4; RFC 8292).
///
/// Declared here, so that help, completions and the man page know it; it runs in
/// `kindly-push-send`, the binary that links libcrypto (P-256), as `send` does.
package struct VAPIDKeygenCommand: RunnableCommand {
    package static let name = "vapid-keygen"
    package static let abstract = "Create a VAPID key for Web Push in a 0600 key file and print its public key."
    package static let examples = [
        Example("Create the backend's VAPID key", "kindly-push vapid-keygen --key-file vapid.json")
    ]
    package static let discussion = """
        Backend side. Generates a P-256 key pair, writes the VAPID key file {"public_key",
        "secret_key"} (mode 0600; an existing file is never replaced) and prints
        {"public_key": B64URL}: the uncompressed point in unpadded base64url, the
        applicationServerKey that browsers and UnifiedPush distributors take. The key signs
        the VAPID token of every Web Push request (RFC 8292). Keep the file secret. The
        secret key is never printed.
        """
    package static let keyFile = Option<String>("--key-file", "PATH", "Write the VAPID key to this new file (required).", required: true)
    package static let help = SharedOptions.help.taken

    package let path: String
    /// The key maker of this binary (``CommandTable/Services/send``).
    let services: (any SendServices)?

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        try SharedOptions.noPositionals(arguments, command: Self.name)
        guard let path = arguments[Self.keyFile], !path.isEmpty else {
            throw CodedError.usage("missing '--key-file PATH'", command: Self.name)
        }
        self.path = path
        services = environment.table.services.send
    }

    package static func needsDesktop(_ arguments: ParsedArguments, environment: CommandEnvironment) -> Bool { false }

    package func run() -> Int32 {
        guard let services else {
            Diagnostics.report(CodedError(.io, "'\(Self.name)' runs in \(SiblingBinary.send.name), which was not run"))
            return ErrorCode.io.exitStatus
        }
        return services.vapidKeygen(keyFile: path)
    }
}
