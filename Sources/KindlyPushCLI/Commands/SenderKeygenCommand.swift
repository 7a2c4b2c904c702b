package import KindlyPushBase
internal import KindlyPushCore

/// `kindly-push sender-keygen --key-file PATH`: the backend's sender key (docs/spec/wire-format.md section 7.1).
package struct SenderKeygenCommand: RunnableCommand {
    package static let name = "sender-keygen"
    package static let abstract = "Create a sender key in a 0600 sender key file and print its sid and public key."
    package static let examples = [
        Example("Create the backend's sender key", "kindly-push sender-keygen --key-file sender.json")
    ]
    package static let discussion = """
        Backend side. Generates an X25519 key pair, writes the sender key file
        {"sid", "public_key", "secret_key"} (mode 0600; an existing file is never replaced) and
        prints {"sid": B64, "public_key": B64} for devices to pin (kindly-push senders add).
        Keep the file secret: whoever holds it can send pushes that devices pinning it trust.
        Seal with it: kindly-push seal --sender-key-file <path>. The secret key is never printed.
        """
    package static let keyFile = Option<String>("--key-file", "PATH", "Write the sender key to this new file (required).", required: true)
    package static let help = SharedOptions.help.taken

    package let path: String

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        try SharedOptions.noPositionals(arguments, command: Self.name)
        guard let path = arguments[Self.keyFile] else {
            throw CodedError.usage("missing '--key-file PATH'", command: Self.name)
        }
        self.path = path
    }

    package func run() -> Int32 {
        let key = SenderKey.generate()
        do throws(PrivateFileError) {
            try SenderKeyFile.write(key, to: path)
        } catch {
            Diagnostics.report(CodedError(.io, error.description))
            return ErrorCode.io.exitStatus
        }
        return Terminal.printLine(["sid": .string(key.sid.base64URL), "public_key": .string(key.publicKey.base64URL)])
    }
}
