package import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushLibcrypto
internal import KindlyPushWebPush

/// `kindly-push vapid-keygen --key-file PATH`: the backend's VAPID key for Web Push
/// (docs/spec/wire-format.md section 9.4; RFC 8292).
///
/// Declared and run in `kindly-push-send`, the binary that links libcrypto (P-256), as `send` is.
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

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        try SharedOptions.noPositionals(arguments, command: Self.name)
        guard let path = arguments[Self.keyFile], !path.isEmpty else {
            throw CodedError.usage("missing '--key-file PATH'", command: Self.name)
        }
        self.path = path
    }

    package func run() -> Int32 {
        let key: ES256Key
        do throws(LibcryptoError) {
            key = try ES256Key.generate()
        } catch {
            Diagnostics.report(CodedError(.io, "cannot make a P-256 key: \(error)"))
            return ErrorCode.io.exitStatus
        }
        do throws(PrivateFileError) {
            try VAPIDKeyFile.write(key, to: path)
        } catch {
            Diagnostics.report(CodedError(.io, error.description))
            return ErrorCode.io.exitStatus
        }
        return Terminal.printLine(["public_key": .string(Base64.urlEncoded(key.publicKey))])
    }
}
