/// `decrypt` (and `--apply`) as the line engine runs it: a push's bytes in, its payload's
/// compact JSON (or with `applies` the whole APNs document rewritten for display) out. The
/// command, its `--redis` worker and the library's ``KindlyPushDecryption/decryptStream(_:jobs:)``
/// all run this one processor.
package struct DecryptProcessor: DocumentProcessor {
    package let decryption: KindlyPushDecryption
    /// `--apply`: the whole document after apply, not the payload.
    package let applies: Bool

    package init(_ decryption: KindlyPushDecryption, applies: Bool = false) {
        self.decryption = decryption
        self.applies = applies
    }

    package var deviceKeyring: (any Keyring)? { decryption.keyring }

    package func makeScratch() -> PushDecryptor { PushDecryptor(decryption) }

    package func wipe(_ scratch: inout PushDecryptor) { scratch.wipe() }

    /// The fast path for the payload, which decides every document with the strict reader's
    /// errors (not for `applies`, which rewrites the whole document: one tree, read once).
    package func process(bytes: UnsafeRawBufferPointer, scratch: inout PushDecryptor, into output: inout [UInt8]) throws(CodedError)
        -> LineEngine.LineOutcome
    {
        guard !applies else { return try process(bytes: bytes, into: &output) }
        let outcome = scratch.decrypt(bytes, appendingTo: &output)
        if case .failed(let failure) = outcome { throw CodedError(failure) }
        if let problem = outcome.inputProblem(in: bytes, lines: false) { throw CodedError(problem) }
        return .success
    }

    package func process(_ document: JSONValue, into output: inout [UInt8]) throws(CodedError) -> LineEngine.LineOutcome {
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
