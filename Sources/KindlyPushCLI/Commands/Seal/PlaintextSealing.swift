package import KindlyPushBase
internal import KindlyPushCore

/// Sealing one plaintext as `seal` does, shared by the one-recipient stream (`--public-key`,
/// `--key-file`) and `--recipients-inline`: the options, and what a ``PushSealer``'s outcome means
/// for the command.
package enum PlaintextSealing {
    /// `--mode`, `--placeholder-title` and `--placeholder-body`: the push kind and its alert.
    package static func alertOptions(_ options: SealingOptions) throws(CodedError) -> (KindlyPushSealer.Mode, KindlyPushSealer.Placeholder)
    {
        let mode = options.mode ?? .visible
        let title = options.placeholderTitle
        let body = options.placeholderBody
        if mode == .silent, title != nil || body != nil {
            throw CodedError(.usage, "a silent push has no alert: --placeholder-title and --placeholder-body need --mode visible")
        }
        let placeholder = KindlyPushSealer.Placeholder(
            title: title ?? KindlyPushSealer.Placeholder.default.title, body: body ?? KindlyPushSealer.Placeholder.default.body)
        return (mode, placeholder)
    }

    /// `--sender-key-file`: the sender key of version 2 or version 3 mode_auth, or `nil`.
    package static func senderKey(_ options: SealingOptions) throws(CodedError) -> SenderKey? {
        guard let path = options.senderKeyFile else { return nil }
        do throws(PrivateFileError) {
            return try SenderKeyFile.read(path)
        } catch {
            throw CodedError(.io, error.description)
        }
    }

    /// `--wire 1|2|3`: the wire format version, checked against `--sender-key-file` (version 1
    /// has no sender key, version 2 needs one, version 3 is mode_auth with one and mode_base
    /// without); without `--wire`, version 2 with a sender key and version 1 without.
    package static func wireVersion(_ options: SealingOptions, hasSender: Bool) throws(CodedError) -> WireVersion {
        // The parser took only one of the versions' numbers.
        guard let version = options.wire else { return .default(hasSender: hasSender) }
        guard version.allows(sender: hasSender) else {
            throw CodedError(
                .usage,
                hasSender ? "--wire 1 has no sender key: drop --sender-key-file, or seal --wire 2 or 3" : "--wire 2 needs --sender-key-file"
            )
        }
        return version
    }

    /// `--fit`: what happens to a message too large for APNs.
    package static func oversize(_ options: SealingOptions) -> KindlyPushSealer.Oversize {
        options.fits ? .truncateBody : .refuse
    }

    /// The input limit of a sealing run: past 64 KiB with `--fit`, which cuts bodies of any length.
    package static func inputLimit(_ oversize: KindlyPushSealer.Oversize) -> Int {
        oversize == .truncateBody ? StandardInput.fitDocumentSize : StandardInput.maximumDocumentSize
    }

    /// What `seal` makes of a sealer's outcome: a push, or `bad_input` with the general path's
    /// message (`input`: the text the sealer read; a text that is no JSON object is "the input").
    package static func completion(_ outcome: PushSealer.Outcome, input: UnsafeRawBufferPointer) throws(CodedError)
        -> LineEngine.LineOutcome
    {
        switch outcome {
        case .sealed: return .success
        case .failed(let error): throw CodedError(.badInput, error.description)
        case .notJSON(let error): throw CodedError(JSONReader.inputProblem(error, in: input, what: "input", lines: false))
        case .notObject(let kind): throw CodedError(JSONReader.inputProblem(notObject: kind, what: "input"))
        }
    }
}
