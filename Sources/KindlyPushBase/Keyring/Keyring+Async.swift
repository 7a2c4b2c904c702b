internal import KindlyPushCore

extension Keyring {
    /// The secret key with `kid`, looked up on a thread of its own: a keyring that waits (the
    /// Secret Service asks a D-Bus daemon; a file keyring reads a file) never blocks one of the
    /// concurrency runtime's threads.
    ///
    /// ```swift
    /// let key = try await keyring.key(for: kid)   // in a service's async handler
    /// ```
    public func key(for kid: KeyID) async throws(KeyringError) -> DeviceKey {
        try await offTheCooperativePool { () throws(KeyringError) in try self.key(for: kid) }
    }

    /// The pinned sender keys, read on a thread of their own (as the async `key(for:)`).
    public func pinnedSenders() async throws(KeyringError) -> [PinnedSender] {
        try await offTheCooperativePool { () throws(KeyringError) in try self.pinnedSenders() }
    }

    /// The stored keys, listed on a thread of their own (as the async `key(for:)`).
    public func list() async throws(KeyringError) -> [KeyringEntry] {
        try await offTheCooperativePool { () throws(KeyringError) in try self.list() }
    }
}
