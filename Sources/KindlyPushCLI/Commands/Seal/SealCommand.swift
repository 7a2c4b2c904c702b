package import KindlyPushBase
internal import KindlyPushCore

/// `kindly-push seal`: the backend side. Reads a plaintext object, prints a sealed APNs payload.
package struct SealCommand: RunnableCommand, DocumentCommand, DocumentProcessor {
    package static let name = "seal"
    package static let abstract = "Seal a plaintext message for one device and print the APNs payload."
    package static let examples = [
        Example(
            "Seal a message for the device whose key file is device.json",
            "kindly-push seal --key-file device.json < message.json > push.json"),
        Example(
            "Seal version 2, which proves its sender, for a device's public key",
            "kindly-push seal --public-key \"$DEVICE_KEY\" --sender-key-file sender.json < message.json"),
    ]
    package static let arguments = ["[<file> ...]"]
    package static let discussion = """
        Reads a plaintext object ({"chat_id", "title", "body", ...}) on standard input and prints
        the compact APNs payload (wire-format section 3), at most 4096 bytes. With
        --sender-key-file the push is version 2 (wire-format section 7): it proves its sender, and
        only devices that pinned the sender key decrypt it; without, it is version 1. --wire 3
        seals standard HPKE (RFC 9180, wire-format section 8), which any platform's HPKE opens:
        mode_auth with --sender-key-file, mode_base without.

        With --recipients-inline each input is {"public_key": B64, "plaintext": {...}} (and
        optionally "mode", "placeholder_title", "placeholder_body", and "thread_id": aps.thread-id
        of a visible push), sealed for its own device; its "id", its device ("token" for APNs,
        "fcm_token" for FCM, "subscription" for Web Push: at most one), "app", "collapse_id",
        "expiration" and "priority" are checked and copied into its output ({"id", "token", ...,
        "push"}: what 'kindly-push send' reads), and its push is held to that platform's budget
        (APNs 4096 bytes, FCM 3989, Web Push 3993).
        With --fit a body too long for the budget is cut to the longest prefix that fits.
        """
    package static let sealing = OptionGroup(SealingOptions.options)
    package static let streamOptions = OptionGroup(StreamOptions.options)
    package static let redis = OptionGroup(RedisOptions.options)
    package static let help = SharedOptions.help.taken

    package let recipient: DevicePublicKey
    /// The binding to the recipient of version 2 or version 3 mode_auth, computed once for the
    /// run: the second shared secret is the same for every push to this device. `nil` without a
    /// sender key.
    package let sender: SenderBinding?
    /// `--wire`, or its default.
    package let version: WireVersion
    /// Why the sender key cannot seal for this recipient (a low-order device key): every
    /// plaintext then fails with it, as version 1 fails for such a key.
    package let senderRefusal: KindlyPushSealer.SealingError?
    package let mode: KindlyPushSealer.Mode
    package let placeholder: KindlyPushSealer.Placeholder
    package let oversize: KindlyPushSealer.Oversize
    package let stream: StreamOptions

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        let sealing = SealingOptions(arguments)
        (mode, placeholder) = try PlaintextSealing.alertOptions(sealing)
        oversize = PlaintextSealing.oversize(sealing)
        stream = try StreamOptions(arguments, command: Self.name, environment: environment)
        switch (sealing.publicKey, sealing.keyFile) {
        case (let text?, nil):
            do throws(KeyDecodingError) {
                recipient = try DevicePublicKey(base64: text)
            } catch {
                throw CodedError(.usage, "--public-key: \(error)")
            }
            if let reason = recipient.unusableReason { throw CodedError(.usage, "--public-key: \(reason): nothing is sealed for it") }
        case (nil, let path?):
            recipient = try KeyringChoice.keyFile(path).key.publicKey
        case (.some, .some):
            throw CodedError(.usage, "give either --public-key or --key-file, not both")
        case (nil, nil):
            throw CodedError.usage("missing the device key: give --public-key B64 or --key-file PATH", command: Self.name)
        }
        var sender: SenderBinding?
        var senderRefusal: KindlyPushSealer.SealingError?
        let senderKey = try PlaintextSealing.senderKey(sealing)
        version = try PlaintextSealing.wireVersion(sealing, hasSender: senderKey != nil)
        if let key = senderKey {
            do throws(KindlyPushSealer.SealingError) {
                sender = try KindlyPushSealer.binding(of: key, for: recipient)
            } catch {
                senderRefusal = error
            }
        }
        self.sender = sender
        self.senderRefusal = senderRefusal
    }

    package var inputLimit: Int { PlaintextSealing.inputLimit(oversize) }

    package func makeScratch() -> PushSealer {
        // A sender key that cannot seal for this recipient: every plaintext fails with `senderRefusal`.
        PushSealer(
            recipient: recipient, sender: sender, version: senderRefusal == nil ? version : .default(hasSender: false), mode: mode,
            placeholder: placeholder, oversize: oversize, refusal: senderRefusal)
    }

    package func wipe(_ scratch: inout PushSealer) { scratch.wipe() }

    /// The sealer decides every input, reading it once (``PushSealer``).
    package func process(bytes: UnsafeRawBufferPointer, scratch: inout PushSealer, into output: inout [UInt8]) throws(CodedError)
        -> LineEngine.LineOutcome
    {
        try PlaintextSealing.completion(scratch.seal(plaintext: bytes, appendingTo: &output), input: bytes)
    }

    package func process(_ document: JSONValue, into output: inout [UInt8]) throws(CodedError) -> LineEngine.LineOutcome {
        // The recipient first, then section 4, as the fast path decides.
        var sealer = makeScratch()
        defer { sealer.wipe() }
        do throws(KindlyPushSealer.SealingError) {
            if let senderRefusal { throw senderRefusal }
            try sealer.seal(try KindlyPushSealer.payload(plaintext: document), appendingTo: &output)
        } catch {
            throw CodedError(.badInput, error.description)
        }
        return .success
    }
}
