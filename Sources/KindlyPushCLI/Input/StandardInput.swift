package import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Reading pushes from standard input: one document, or one document per line (`--jsonl`).
package enum StandardInput {
    /// The limit of docs/spec/streams.md: a document (or a line) over 64 KiB is `bad_input`.
    package static let maximumDocumentSize = WireFormat.maximumInputSize

    /// The limit of `seal --fit`: bodies of any length up to it are cut to fit, so it
    /// is well past the 64 KiB of the other inputs; a document is still read into memory whole,
    /// one line at a time, so memory stays bounded by it.
    package static let fitDocumentSize = 1 << 20

    /// Reads all of standard input as one document, refusing more than `limit` without
    /// reading further than one byte past the limit. The result's storage is as large as the
    /// document; the buffer read into is zeroed as far as it was written (it may hold a
    /// plaintext, for seal) and freed.
    package static func readDocument(descriptor: Int32 = STDIN_FILENO, limit: Int = maximumDocumentSize) throws(CodedError) -> [UInt8] {
        // Not zero-filled: pages that read() never reaches stay unmapped, so a push of a few
        // hundred bytes costs a page of memory, not 64 KiB (start-up memory).
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: limit + 1, alignment: 1)
        var length = 0
        defer {
            Sodium.wipe(UnsafeMutableRawBufferPointer(rebasing: buffer[..<length]))
            buffer.deallocate()
        }
        do throws(Errno) {
            try FileDescriptor(rawValue: descriptor).readAll(into: buffer, filled: &length)
        } catch {
            throw CodedError(.io, "cannot read standard input: \(error)")
        }
        guard length <= limit else {
            throw CodedError(.badInput, "the input is over \(LineEngine.sizeText(limit))")
        }
        return [UInt8](UnsafeRawBufferPointer(rebasing: buffer[..<length]))
    }

    /// On a terminal, says on standard error that input is awaited: a command run with nothing
    /// piped in would otherwise wait in silence.
    package static func noteIfTerminal(lineMode: Bool) {
        guard isatty(STDIN_FILENO) == 1 else { return }
        Diagnostics.line(
            lineMode
                ? "kindly-push: waiting for JSON lines on the terminal, one document each; Ctrl-D ends"
                : "kindly-push: waiting for a JSON document on the terminal; end it with Ctrl-D")
    }

    /// Reads one JSON document that must be an object, with the strict reader.
    package static func parseObject(_ bytes: UnsafeRawBufferPointer, what: String = "input") throws(CodedError) -> JSONValue {
        switch JSONReader.parseInputObject(bytes, what: what) {
        case .success(let value): return value
        case .failure(let problem): throw CodedError(problem)
        }
    }
}
