package import KindlyPushBase
internal import KindlyPushCore

/// `kindly-push decrypt`: the device side. Prints the decrypted payload, or with `--apply`
/// the whole APNs document rewritten for display.
package struct DecryptCommand: DocumentCommand {
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
    package static let options: [OptionSpec] = [apply.spec] + SharedOptions.decryption

    package let decryption: KindlyPushDecryption
    package let applies: Bool
    package let stream: StreamOptions

    package var deviceKeyring: (any Keyring)? { decryption.keyring }

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        applies = arguments[Self.apply]
        stream = try StreamOptions(arguments, command: Self.name, environment: environment)
        decryption = try KeyringChoice.decryption(KeyringOptions(arguments), environment: environment)
    }

    package func makeScratch() -> PushDecryptor { PushDecryptor(decryption) }

    package func wipe(_ scratch: inout PushDecryptor) { scratch.wipe() }

    /// The fast path for the payload, which decides every document with the strict reader's
    /// errors (not for --apply, which rewrites the whole document: one tree, read once).
    package func process(bytes: UnsafeRawBufferPointer, scratch: inout PushDecryptor, into output: inout [UInt8]) throws(CodedError)
        -> Completion
    {
        guard !applies else { return try process(bytes: bytes, into: &output) }
        let outcome = scratch.decrypt(bytes, appendingTo: &output)
        if case .failed(let failure) = outcome { throw CodedError(failure) }
        if let problem = outcome.inputProblem(in: bytes, lines: false) { throw CodedError(problem) }
        return .success
    }

    package func process(_ document: JSONValue, into output: inout [UInt8]) throws(CodedError) -> Completion {
        switch decryption.decryptResult(userInfo: document) {
        case .success(let payload):
            if applies {
                JSONWriter.write(KindlyPushDecryption.apply(payload, toUserInfo: document), to: &output)
            } else {
                JSONWriter.write(.object(payload.object), to: &output)
            }
            return .success
        case .failure(let failure):
            throw CodedError(failure)
        }
    }
}
