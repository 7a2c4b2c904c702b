internal import CGLib
internal import CSecretShim
package import KindlyPush
package import KindlyPushCore

/// The device's UnifiedPush registration in the Secret Service (wire-format section 9.1: its Web
/// Push key pair and auth secret, a second key beside the device key): one item of the schema
/// `ai.kindly.push.UnifiedPushRegistration` in the keyring's collection, whose secret is the
/// registration document and whose attributes are its `token` and `distributor`. Never prompts
/// and never blocks past the time budget, as every operation of this keyring.
extension SecretServiceKeyring {
    /// Stores `document` as the registration, in place of any before it.
    package func storeUnifiedPushRegistration(_ document: SecureBytes, token: String, distributor: String) throws(KeyringError) {
        let operation = try Operation(self, "store the UnifiedPush registration")
        guard let collection = try operation.unlockedCollection() else {
            throw .io("\(self.collection) does not exist: \(Self.missingCollectionAction) (KindlyPush never prompts)")
        }
        try deleteUnifiedPushItems(operation, in: collection)
        let attributes = Attributes([("token", token), ("distributor", distributor)])
        // secret_value_new copies the bytes into libsecret's own secure memory, which it wipes
        // when the value is released.
        let value = document.withUnsafeBytes { bytes in
            secret_value_new(bytes.baseAddress!.assumingMemoryBound(to: CChar.self), bytes.count, "application/json")
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        let item = try operation.call("store the UnifiedPush registration") { error in
            secret_item_create_sync(
                collection.pointer, kps_unifiedpush_schema(), attributes.table, "KindlyPush UnifiedPush registration", value,
                SECRET_ITEM_CREATE_NONE, operation.deadline.cancellable, error)
        }
        guard let item else { throw .io("libsecret refused to store the UnifiedPush registration") }
        g_object_unref(item)
    }

    /// The registration document, in wiped memory; `nil` when there is none.
    package func unifiedPushRegistration() throws(KeyringError) -> SecureBytes? {
        let operation = try Operation(self, "read the UnifiedPush registration")
        guard let collection = try operation.unlockedCollection() else { return nil }
        for item in try operation.items(in: collection, schema: kps_unifiedpush_schema(), attributes: Attributes([])) {
            guard secret_item_get_locked(item.pointer) == 0 else {
                throw .locked("the UnifiedPush registration in \(self.collection) is locked")
            }
            let loaded = try operation.callIfPresent("read the UnifiedPush registration") { error in
                secret_item_load_secret_sync(item.pointer, operation.deadline.cancellable, error)
            }
            // Deleted by another client since the search.
            guard let loaded, loaded != 0, let value = secret_item_get_secret(item.pointer) else { continue }
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            var length = 0
            guard let bytes = secret_value_get(value, &length) else { continue }
            return SecureBytes(copying: UnsafeRawBufferPointer(start: bytes, count: length))
        }
        return nil
    }

    /// Forgets the registration: its item is deleted (none there: nothing to do).
    package func deleteUnifiedPushRegistration() throws(KeyringError) {
        let operation = try Operation(self, "delete the UnifiedPush registration")
        guard let collection = try operation.unlockedCollection() else { return }
        try deleteUnifiedPushItems(operation, in: collection)
    }

    private func deleteUnifiedPushItems(_ operation: Operation, in collection: GObject<SecretCollection>) throws(KeyringError) {
        for item in try operation.items(in: collection, schema: kps_unifiedpush_schema(), attributes: Attributes([])) {
            _ = try operation.callIfPresent("delete the UnifiedPush registration") { error in
                secret_item_delete_sync(item.pointer, operation.deadline.cancellable, error)
            }
        }
    }
}
