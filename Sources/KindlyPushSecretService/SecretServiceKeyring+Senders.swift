internal import CGLib
internal import CSecretShim
public import KindlyPush
internal import KindlyPushCore

/// Pinned sender keys in the Secret Service (docs/spec/wire-format.md section 7.1): each is one item of the
/// schema `ai.kindly.push.SenderKey` in the keyring's collection, beside the device keys and with
/// the same care. The item's secret is the pinned key's 32 bytes; its attributes are `sid` and
/// `public_key` (base64url), `label` and `created` (Unix seconds as decimal text).
///
/// Reading the pins loads each item's secret and requires it to agree with the attributes: an
/// item that does not is an error, never skipped, since skipping the only pin would leave pinned
/// mode. Like every operation of this keyring, pinning and reading never prompt and never block
/// past the time budget.
extension SecretServiceKeyring {
    /// Pins `key` with `label` (see `Keyring/pinSender(_:label:)`).
    public func pinSender(_ key: SenderPublicKey, label: String) throws(KeyringError) {
        if let problem = key.unusableReason { throw .io("cannot pin the sender key: \(problem)") }
        if let problem = KeyringLabel.problem(with: label) { throw .io("cannot pin the sender key: \(problem)") }
        let operation = try Operation(self, "pin a sender key")
        guard let collection = try operation.unlockedCollection() else {
            throw .io("\(self.collection) does not exist: \(Self.missingCollectionAction) (KindlyPush never prompts)")
        }
        guard try senderItems(operation, in: collection, sid: key.sid).isEmpty else { throw .senderAlreadyPinned(key.sid) }
        let attributes = Attributes([
            ("sid", key.sid.base64URL),
            ("public_key", key.base64URL),
            ("label", label),
            ("created", String(unixTimeNow())),
        ])
        let value = key.rawRepresentation.withUnsafeBytes { bytes in
            secret_value_new(bytes.baseAddress!.assumingMemoryBound(to: CChar.self), bytes.count, "application/octet-stream")
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        let itemLabel =
            label.isEmpty ? "KindlyPush pinned sender key \(key.sid)" : "KindlyPush pinned sender key \(key.sid): \(label)"
        let item = try operation.call("pin a sender key") { error in
            secret_item_create_sync(
                collection.pointer, kps_sender_schema(), attributes.table, itemLabel, value, SECRET_ITEM_CREATE_NONE,
                operation.deadline.cancellable, error)
        }
        guard let item else { throw .io("libsecret refused to store the sender key (its attributes did not match the schema)") }
        g_object_unref(item)
    }

    /// Every pinned sender key, oldest first (see `Keyring/pinnedSenders()`).
    public func pinnedSenders() throws(KeyringError) -> [PinnedSender] {
        let operation = try Operation(self, "read the pinned sender keys")
        guard let collection = try operation.unlockedCollection() else { return [] }
        var pinned: [PinnedSender] = []
        for item in try senderItems(operation, in: collection, sid: nil) {
            guard secret_item_get_locked(item.pointer) == 0 else {
                throw .locked("a pinned sender key in \(self.collection) is locked")
            }
            guard let table = secret_item_get_attributes(item.pointer) else {
                throw .io("a pinned sender key in \(self.collection) has no attributes")
            }
            let attributes = Attributes(taking: table)
            let sidText = attributes["sid"] ?? "?"
            guard let key = attributes["public_key"].flatMap({ try? SenderPublicKey(base64: $0) }),
                attributes["sid"].flatMap(SenderID.init(base64:)) == key.sid
            else { throw .io("the Secret Service item of the pinned sender key \(sidText) does not hold a public key and its sid") }
            let loaded = try operation.callIfPresent("read a pinned sender key") { error in
                secret_item_load_secret_sync(item.pointer, operation.deadline.cancellable, error)
            }
            // Unpinned by another client since the search.
            guard let loaded, loaded != 0, let value = secret_item_get_secret(item.pointer) else { continue }
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            var length = 0
            let bytes = secret_value_get(value, &length)
            guard let bytes, Array(UnsafeRawBufferPointer(start: bytes, count: length)) == key.rawRepresentation else {
                throw .io("the Secret Service item of the pinned sender key \(key.sid) holds another key than its attributes say")
            }
            let created = attributes["created"].flatMap { Int64($0) } ?? 0
            pinned.append(PinnedSender(publicKey: key, label: attributes["label"] ?? "", created: created))
        }
        return pinned.sorted()
    }

    /// Removes the pinned sender key `sid` (see `Keyring/unpinSender(_:)`).
    public func unpinSender(_ sid: SenderID) throws(KeyringError) {
        let operation = try Operation(self, "unpin a sender key")
        guard let collection = try operation.unlockedCollection() else { throw .senderNotFound(sid) }
        let items = try senderItems(operation, in: collection, sid: sid)
        guard !items.isEmpty else { throw .senderNotFound(sid) }
        for item in items {
            _ = try operation.callIfPresent("unpin a sender key") { error in
                secret_item_delete_sync(item.pointer, operation.deadline.cancellable, error)
            }
        }
        SenderSecretCache.shared.evict(sid: sid)
    }

    /// The pinned sender key items in `collection`, all of them or those of `sid`.
    private func senderItems(
        _ operation: Operation, in collection: GObject<SecretCollection>, sid: SenderID?
    ) throws(KeyringError) -> [GObject<SecretItem>] {
        try operation.items(in: collection, schema: kps_sender_schema(), attributes: Attributes(sid.map { [("sid", $0.base64URL)] } ?? []))
    }
}
