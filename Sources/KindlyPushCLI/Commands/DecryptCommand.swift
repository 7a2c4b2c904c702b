package import KindlyPushBase
internal import KindlyPushCore

/// `kindly-push decrypt`: the device side. Prints the decrypted payload, or with `--apply`
/// the whole APNs document rewritten for display.
package struct DecryptCommand: RunnableCommand, DocumentCommand {
    package static let name = "decrypt"
    package static let abstract = "Decrypt a Kindly push and print its payload (or, with --apply, the rewritten push)."
    package static let examples = [
        Example("Decrypt a push with the key in a key file", "kindly-push decrypt --key-file device.json < push.json"),
        Example("Decrypt pretty-printed pushes, compacted to one line each", "jq -c . pushes.json | kindly-push decrypt --jsonl"),
    ]
    package static let arguments = ["[<file> ...]"]
    package static let discussion = """
        Reads an APNs JSON document on standard input. The key is looked up by the push's kid in
        the keyring, or read from --key-file. With a pinned sender key (in the keyring, or given
        with --sender-key) only version 2 and version 3 mode_auth pushes from a pinned sender
        decrypt; version 1 and version 3 mode_base are then refused. Versions 1, 2 and 3 are read
        with no flag. Failures exit with the reason's code: \(ErrorCode.exitStatuses(ErrorCode.allCases.filter { $0 != .usage })).
        """
    package static let apply = Flag("--apply", "Print the whole APNs document after apply (title and body set, marked decrypted).")
    package static let decryption = OptionGroup(DecryptionOptions.options)

    package let processor: DecryptProcessor
    package let stream: StreamOptions

    /// The decryption, with the keyring the options name.
    package var decryption: KindlyPushDecryption { processor.decryption }

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        stream = try StreamOptions(arguments, command: Self.name, environment: environment)
        processor = DecryptProcessor(
            try KeyringChoice.decryption(KeyringOptions(arguments), environment: environment), applies: arguments[Self.apply])
    }
}
