public import FoundationEssentials

// Every error of the library is a `LocalizedError` whose text is the one line the `kindly-push`
// command prints after its name, so that `localizedDescription` says what went wrong instead of
// "The operation could not be completed".

extension DecryptionFailure: LocalizedError {
    /// `CODE: DETAIL`, as the command prints it.
    public var errorDescription: String? { description }
}

extension KeyringError: LocalizedError {
    /// The keyring's one-line message.
    public var errorDescription: String? { description }
}

extension PrivateFileError: LocalizedError {
    /// The one-line message about the key file.
    public var errorDescription: String? { description }
}

extension KeyDecodingError: LocalizedError {
    /// The one-line message about the key text (never the text itself).
    public var errorDescription: String? { description }
}

extension PlaintextError: LocalizedError {
    /// The rule of docs/spec/wire-format.md section 4 that the plaintext breaks.
    public var errorDescription: String? { description }
}

extension KindlyPushSealer.SealingError: LocalizedError {
    /// Why the push could not be sealed.
    public var errorDescription: String? { description }
}

extension JSONReadError: LocalizedError {
    /// What is wrong with the JSON text, and where.
    public var errorDescription: String? { description }
}

extension Registration.InvalidToken: LocalizedError {
    /// What is wrong with the device token.
    public var errorDescription: String? { description }
}
