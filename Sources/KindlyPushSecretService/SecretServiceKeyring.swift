internal import CGLib
internal import CSecretShim
public import KindlyPush
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Keys in the freedesktop Secret Service (gnome-keyring, KeePassXC) through libsecret: the
/// Linux counterpart of the keychain group that an iOS app shares with its notification
/// service extension.
///
/// Each key is one item of the schema `ai.kindly.push.DeviceKey` in one collection (by default
/// the user's default keyring). The item's secret is the 32-byte secret key, binary; its
/// attributes are public: `kid` and `public_key` (base64url), `label`, and `created` (Unix
/// seconds as decimal text). Several keys coexist (rotation); a look-up finds the push's `kid`.
/// Pinned sender keys are items of their own schema in the same collection (see
/// ``pinnedSenders()``).
///
/// The keyring never prompts and never blocks:
/// - it checks the collection's locked state before anything else, with calls that cannot
///   prompt, and reports a locked collection as `KeyringError/locked(_:)`;
/// - a prompt the service asks for anyway is refused at once (`KeyringError/locked(_:)`);
/// - every operation runs under one time budget (``timeout``, 1.5 s by default): a missing bus,
///   a missing service or a service that does not answer is `KeyringError/unreachable(_:)`
///   within that budget, even when the service hangs.
///
/// Secrets cross libsecret only in its own wiping buffers (`SecretValue`) and `SecureBytes`.
/// The value is `Sendable` and safe to use from many threads at once; it keeps one private bus
/// connection (never the process-wide session-bus singleton, whose loss would exit the process).
public struct SecretServiceKeyring: Keyring {
    public let name = "secret-service"

    /// Which collection of the Secret Service holds the keys.
    public enum Collection: Sendable, Hashable, CustomStringConvertible {
        /// A collection by alias. gnome-keyring supports only `default`, the user's default keyring.
        case alias(String)
        /// A collection by D-Bus object path, such as `/org/freedesktop/secrets/collection/login`.
        case objectPath(String)

        /// The user's default keyring.
        public static let `default` = Collection.alias("default")

        public var description: String {
            switch self {
            case .alias(let alias): return "the Secret Service collection '\(alias)'"
            case .objectPath(let path): return "the Secret Service collection \(path)"
            }
        }

        /// Why an ``objectPath(_:)`` is not a D-Bus object path, or `nil` when it is one (or an alias).
        /// GLib refuses such a path with a critical warning and never starts the call, which then
        /// waits forever; it is checked here first, so that it fails at once.
        package var objectPathProblem: String? {
            guard case .objectPath(let path) = self, !SecretServiceKeyring.isObjectPath(path) else { return nil }
            return "'\(path)' is not a D-Bus object path (\"/\" or \"/\" and elements of A-Z, a-z, 0-9 and \"_\" "
                + "separated by single \"/\", with no \"/\" at the end)"
        }
    }

    /// Whether `path` is a D-Bus object path, as `g_variant_is_object_path` checks it: `/`, or
    /// `/` followed by one or more elements of `[A-Za-z0-9_]` separated by single `/`, with no `/`
    /// at the end.
    package static func isObjectPath(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        var elementLength = 0
        for byte in bytes.dropFirst() {
            switch byte {
            case UInt8(ascii: "/"):
                guard elementLength > 0 else { return false }
                elementLength = 0
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "_"):
                elementLength += 1
            default:
                return false
            }
        }
        return elementLength > 0
    }

    /// The D-Bus name every Secret Service implementation owns.
    static let busName = "org.freedesktop.secrets"

    /// The time budget of one operation unless the initialiser is given another.
    public static let defaultTimeout: Duration = .milliseconds(1500)

    /// How long the session-bus probes (``sessionBusAnswers(busAddress:timeout:)``,
    /// ``automaticChoice(busAddress:forStoring:timeout:)``) wait for the bus by default.
    public static let defaultProbeTimeout: Duration = .milliseconds(500)

    /// Where keys are stored, looked up, listed and deleted.
    public let collection: Collection
    /// The D-Bus address of the session bus, or `nil` when none is known.
    public let busAddress: String?
    /// The most one operation may take, from its start to its answer or its failure.
    public let timeout: Duration

    private let connections: ConnectionCache

    /// A keyring in `collection` of the Secret Service on the bus at `busAddress`.
    ///
    /// - Parameters:
    ///   - collection: the collection that holds the keys: the default one (alias `default`), or
    ///     one named by alias or object path.
    ///   - busAddress: a D-Bus address; by default `DBUS_SESSION_BUS_ADDRESS`, read now. Without
    ///     either, every operation fails with `KeyringError/unreachable(_:)`. (GLib would fall
    ///     back to X11 autolaunch, which starts a bus as a side effect; this keyring never does.)
    ///   - timeout: the time budget of each operation.
    public init(collection: Collection = .default, busAddress: String? = nil, timeout: Duration = defaultTimeout) {
        self.collection = collection
        self.busAddress = busAddress ?? SecretServiceKeyring.environmentBusAddress()
        self.timeout = timeout
        self.connections = ConnectionCache()
    }

    /// Whether a Secret Service can be used now: a session bus is known (`busAddress`, else
    /// `DBUS_SESSION_BUS_ADDRESS`), answers within `timeout`, and has the Secret Service running or
    /// can start it. `kindly-push --keyring auto` uses the Secret Service exactly when this is true.
    ///
    /// Never prompts and never starts anything itself.
    public static func sessionBusAnswers(busAddress: String? = nil, timeout: Duration = defaultProbeTimeout) -> Bool {
        probeSessionBus(busAddress: busAddress, timeout: timeout).offersSecretService
    }

    static func environmentBusAddress() -> String? {
        guard let value = getenv("DBUS_SESSION_BUS_ADDRESS") else { return nil }
        let address = String(cString: value)
        return address.isEmpty ? nil : address
    }

    // MARK: Keyring

    public func store(_ key: DeviceKey, label: String) throws(KeyringError) {
        if let problem = KeyringLabel.problem(with: label) { throw .io("cannot store the key: \(problem)") }
        let operation = try Operation(self, "store a key")
        guard let collection = try operation.unlockedCollection() else {
            // Creating a collection needs a password prompt, which this keyring never shows.
            throw .io("\(self.collection) does not exist: \(Self.missingCollectionAction) (KindlyPush never prompts)")
        }
        guard try operation.items(in: collection, kid: key.kid).isEmpty else { throw .alreadyExists(key.kid) }

        let attributes = Attributes([
            ("kid", key.kid.base64URL),
            ("public_key", key.publicKey.base64URL),
            ("label", label),
            ("created", String(unixTimeNow())),
        ])
        // secret_value_new copies the bytes into libsecret's own secure memory, which it wipes
        // when the value is released.
        let value = key.secretKey.withUnsafeBytes { secret in
            secret_value_new(secret.baseAddress!.assumingMemoryBound(to: CChar.self), secret.count, "application/octet-stream")
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        let itemLabel = label.isEmpty ? "KindlyPush device key \(key.kid)" : "KindlyPush device key \(key.kid): \(label)"
        let item = try operation.call("store a key") { error in
            secret_item_create_sync(
                collection.pointer, kps_schema(), attributes.table, itemLabel, value, SECRET_ITEM_CREATE_NONE,
                operation.deadline.cancellable, error)
        }
        // NULL without an error: libsecret rejected the attributes against the schema.
        guard let item else { throw .io("libsecret refused to store the key (its attributes did not match the schema)") }
        g_object_unref(item)
    }

    public func key(for kid: KeyID) throws(KeyringError) -> DeviceKey {
        let operation = try Operation(self, "look up a key")
        guard let collection = try operation.unlockedCollection() else { throw .notFound(kid) }
        let items = try operation.items(in: collection, kid: kid)
        var sawLocked = false
        for item in items {
            // Reading a locked item's secret would need an unlock, which may prompt.
            guard secret_item_get_locked(item.pointer) == 0 else {
                sawLocked = true
                continue
            }
            let loaded = try operation.callIfPresent("read a key") { error in
                secret_item_load_secret_sync(item.pointer, operation.deadline.cancellable, error)
            }
            guard let loaded, loaded != 0, let value = secret_item_get_secret(item.pointer) else { continue }
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            var length = 0
            let bytes = secret_value_get(value, &length)
            guard let bytes, length == X25519.keyLength else {
                throw .io("the Secret Service item for kid \(kid) does not hold a 32-byte secret key")
            }
            // The only copy outside libsecret's wiping memory is this wiping buffer.
            let secret = SecureBytes(copying: UnsafeRawBufferPointer(start: bytes, count: length))
            let key = DeviceKey(secretKey: try! DeviceSecretKey(secret))
            guard key.kid == kid else {
                throw .io("the Secret Service item for kid \(kid) holds the key of another kid")
            }
            return key
        }
        if sawLocked { throw .locked("the Secret Service items for kid \(kid) are locked") }
        throw .notFound(kid)
    }

    public func list() throws(KeyringError) -> [KeyringEntry] {
        try listIfPresent() ?? []
    }

    /// What to do when the collection does not exist: creating one needs the service's
    /// password prompt, which KindlyPush never shows (doctor and keygen say the same).
    package static let missingCollectionAction =
        "create it where your keyring prompts for its password (Seahorse: File, New, Password Keyring, then Set as Default; "
        + "gnome-keyring-daemon --unlock at login makes the 'login' one), or use --keyring file"

    /// The keys, or `nil` when the collection does not exist (``list()`` answers `[]` then).
    package func listIfPresent() throws(KeyringError) -> [KeyringEntry]? {
        let operation = try Operation(self, "list keys")
        guard let collection = try operation.unlockedCollection() else { return nil }
        var entries: [KeyringEntry] = []
        for item in try operation.items(in: collection, kid: nil) {
            guard secret_item_get_locked(item.pointer) == 0 else {
                throw .locked("a key in \(self.collection) is locked")
            }
            guard let table = secret_item_get_attributes(item.pointer) else { continue }
            let attributes = Attributes(taking: table)
            // Items of this schema written by something else are skipped, not trusted.
            guard let kid = attributes["kid"].flatMap(KeyID.init(base64:)),
                let publicKey = attributes["public_key"].flatMap({ try? DevicePublicKey(base64: $0) }),
                publicKey.kid == kid
            else { continue }
            let created = attributes["created"].flatMap { Int64($0) } ?? 0
            entries.append(KeyringEntry(kid: kid, publicKey: publicKey, label: attributes["label"] ?? "", created: created))
        }
        return entries.sorted()
    }

    public func delete(_ kid: KeyID) throws(KeyringError) {
        let operation = try Operation(self, "delete a key")
        guard let collection = try operation.unlockedCollection() else { throw .notFound(kid) }
        let items = try operation.items(in: collection, kid: kid)
        guard !items.isEmpty else { throw .notFound(kid) }
        for item in items {
            // An item that is gone already is as good as deleted.
            _ = try operation.callIfPresent("delete a key") { error in
                secret_item_delete_sync(item.pointer, operation.deadline.cancellable, error)
            }
        }
        SenderSecretCache.shared.evict(kid: kid)
    }

    /// The object paths of the collection's device-key and sender-key items with each one's
    /// `Modified` time (see `Keyring.changeToken()`): the Secret Service gives each new item a new
    /// path, so the paths change with every key or pin stored or deleted, by any client, and an
    /// item another client changed in place has a new `Modified` time. Found without loading an
    /// item or a secret: one bus call per schema and one per item, within the time budget. `nil`
    /// when the collection is locked, the service cannot be reached, or an item changed less than
    /// two seconds ago (`Modified` counts whole seconds).
    public func changeToken() -> KeyringChangeToken? {
        do throws(KeyringError) {
            let operation = try Operation(self, "read what the keyring holds")
            guard let collection = try operation.unlockedCollection() else { return KeyringChangeToken([]) }
            var bytes: [UInt8] = []
            for schema in [kps_schema(), kps_sender_schema()] {
                let attributes = Attributes([])
                let paths = try operation.call("search the keyring") { error in
                    kps_collection_search_schema_paths(collection.pointer, schema, attributes.table, operation.deadline.cancellable, error)
                }
                defer { g_strfreev(paths) }
                var names: [String] = []
                var index = 0
                while let path = paths?[index] {
                    names.append(String(cString: path))
                    index += 1
                }
                for name in names.sorted() {
                    bytes += Array(name.utf8) + [0]
                    // An item changed in place (another client's ItemChanged) keeps its path:
                    // its Modified time tells. Gone meanwhile: the next token differs anyway.
                    var modified: UInt64 = 0
                    let found = try operation.callIfPresent("read an item's modification time") { error in
                        kps_item_modified(collection.pointer, name, &modified, operation.deadline.cancellable, error)
                    }
                    guard found != nil else { return nil }
                    // Modified counts whole seconds: a change within the last two is not settled
                    // (another in the same second would not move it), so the cache re-reads.
                    if modified + 2 > UInt64(max(0, time(nil))) { return nil }
                    withUnsafeBytes(of: modified.littleEndian) { bytes += $0 }
                }
                bytes.append(1)
            }
            return KeyringChangeToken(bytes)
        } catch {
            return nil
        }
    }
}

// MARK: - One operation

extension SecretServiceKeyring {
    /// One keyring operation: its time budget and the Secret Service proxy it talks through.
    /// Lives on one thread, for one call.
    final class Operation {
        let keyring: SecretServiceKeyring
        let deadline: Deadline
        let connection: BusConnection
        let service: UnsafeMutablePointer<SecretService>

        init(_ keyring: SecretServiceKeyring, _ what: String) throws(KeyringError) {
            self.keyring = keyring
            if let problem = keyring.collection.objectPathProblem {
                throw .io("cannot use the Secret Service collection: \(problem)")
            }
            deadline = Deadline(keyring.timeout)
            guard let address = keyring.busAddress else {
                throw .unreachable("no session bus: DBUS_SESSION_BUS_ADDRESS is not set")
            }
            connection = try keyring.connections.connection(to: address, deadline: deadline, timeout: keyring.timeout)
            var error: UnsafeMutablePointer<GError>?
            guard let service = kps_service_new(connection.pointer, deadline.cancellable, &error) else {
                throw Operation.failure(error, what, keyring: keyring, connection: connection)
            }
            self.service = service
        }

        deinit {
            kps_service_close_session(service, connection.pointer)
            g_object_unref(service)
        }

        /// Runs a libsecret call that reports failure through a GError, and translates it.
        func call<T>(_ what: String, _ body: (UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T) throws(KeyringError) -> T {
            var error: UnsafeMutablePointer<GError>?
            let result = body(&error)
            if error != nil { throw Operation.failure(error, what, keyring: keyring, connection: connection) }
            return result
        }

        /// As ``call(_:_:)``, but "there is no such object" gives `nil`: the object is not there,
        /// or another client deleted it meanwhile.
        func callIfPresent<T>(_ what: String, _ body: (UnsafeMutablePointer<UnsafeMutablePointer<GError>?>) -> T) throws(KeyringError) -> T?
        {
            var error: UnsafeMutablePointer<GError>?
            let result = body(&error)
            if let error {
                if kps_error_means_missing(error) != 0 {
                    g_error_free(error)
                    return nil
                }
                throw Operation.failure(error, what, keyring: keyring, connection: connection)
            }
            return result
        }

        static func failure(
            _ error: UnsafeMutablePointer<GError>?, _ what: String, keyring: SecretServiceKeyring, connection: BusConnection?
        ) -> KeyringError {
            guard let error else { return .io("the Secret Service could not \(what)") }
            defer { g_error_free(error) }
            let message = error.pointee.message.map { String(cString: $0) } ?? "no detail"
            let kind = kps_error_kind(error)
            if kind == KPS_ERROR_CANCELLED || kind == KPS_ERROR_UNREACHABLE, let connection {
                // The next operation connects afresh instead of reusing a broken or stalled connection.
                keyring.connections.discard(connection)
            }
            switch kind {
            case KPS_ERROR_CANCELLED:
                return .unreachable("the Secret Service did not answer within \(keyring.timeout.messageText) (while trying to \(what))")
            case KPS_ERROR_UNREACHABLE:
                return .unreachable("could not \(what): \(message)")
            case KPS_ERROR_LOCKED:
                return .locked("\(keyring.collection) is locked (\(message))")
            default:
                return .io("the Secret Service could not \(what): \(message)")
            }
        }

        /// The keyring's collection, or `nil` when no collection has that alias or path. A
        /// locked collection is `KeyringError/locked(_:)`: it is checked before anything else,
        /// with calls that cannot prompt (ReadAlias, the collection's properties).
        func unlockedCollection() throws(KeyringError) -> GObject<SecretCollection>? {
            // gnome-keyring (42) now and then answers that an existing collection is not there
            // while other clients are busy with it (ReadAlias gives "/" when its internal look-up
            // fails; seen roughly once in a thousand first calls of eight fresh clients at once), and
            // asking again at once gets the right answer. So "no such collection" is believed
            // only when it is said twice.
            for _ in 0..<2 {
                let pointer = try callIfPresent("open \(keyring.collection)") { error in
                    switch keyring.collection {
                    case .alias(let alias):
                        // An alias that names no collection gives NULL without an error.
                        return secret_collection_for_alias_sync(service, alias, SECRET_COLLECTION_NONE, deadline.cancellable, error)
                    case .objectPath(let path):
                        return kps_collection_for_path(service, path, deadline.cancellable, error)
                    }
                }
                if let collection = pointer.flatMap({ $0 }) { return try checkedUnlocked(GObject(taking: collection)) }
            }
            return nil
        }

        private func checkedUnlocked(_ collection: GObject<SecretCollection>) throws(KeyringError) -> GObject<SecretCollection> {
            guard secret_collection_get_locked(collection.pointer) == 0 else {
                throw .locked("\(keyring.collection) is locked; unlock it in the keyring (KindlyPush never prompts)")
            }
            return collection
        }

        /// The items of this schema in `collection`, all of them or those of `kid`. Searches
        /// without unlocking and without loading secrets, so nothing can prompt. An item that
        /// another client deletes during the search is left out, not an error.
        func items(in collection: GObject<SecretCollection>, kid: KeyID?) throws(KeyringError) -> [GObject<SecretItem>] {
            try items(in: collection, schema: kps_schema(), attributes: Attributes(kid.map { [("kid", $0.base64URL)] } ?? []))
        }

        /// The items of `schema` in `collection` that match `attributes`, as ``items(in:kid:)``.
        func items(
            in collection: GObject<SecretCollection>, schema: UnsafePointer<SecretSchema>, attributes: Attributes
        ) throws(KeyringError) -> [GObject<SecretItem>] {
            let paths = try call("search the keyring") { error in
                kps_collection_search_schema_paths(collection.pointer, schema, attributes.table, deadline.cancellable, error)
            }
            defer { g_strfreev(paths) }
            var items: [GObject<SecretItem>] = []
            var index = 0
            while let path = paths?[index] {
                index += 1
                let item = try callIfPresent("read the keyring") { error in
                    kps_item_for_path(service, path, deadline.cancellable, error)
                }
                if let item = item.flatMap({ $0 }) { items.append(GObject(taking: item)) }
            }
            return items
        }
    }
}

// MARK: - GLib plumbing

/// An owned reference to a GObject, released when this goes away.
final class GObject<Pointee> {
    let pointer: UnsafeMutablePointer<Pointee>

    init(taking pointer: UnsafeMutablePointer<Pointee>) {
        self.pointer = pointer
    }

    deinit {
        g_object_unref(pointer)
    }
}

/// A libsecret attribute table (public values only: never a secret).
final class Attributes {
    let table: OpaquePointer

    init(_ pairs: [(String, String)]) {
        table = kps_attributes_new()
        for (key, value) in pairs { kps_attributes_set(table, key, value) }
    }

    init(taking table: OpaquePointer) {
        self.table = table
    }

    subscript(key: String) -> String? {
        g_hash_table_lookup(table, key).map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
    }

    deinit {
        g_hash_table_unref(table)
    }
}

/// One operation's time budget: a GCancellable that a timer cancels when the budget is spent.
/// Every libsecret and GDBus call of the operation takes it, so a service that never answers
/// costs the budget and no more. The timer runs on the shim's own timer thread.
final class Deadline {
    private let deadline: OpaquePointer
    let cancellable: UnsafeMutablePointer<GCancellable>

    init(_ budget: Duration) {
        let (seconds, attoseconds) = budget.components
        let milliseconds = max(0, min(Int64(UInt32.max), seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000))
        deadline = kpg_deadline_new(guint(milliseconds))
        cancellable = kpg_deadline_cancellable(deadline)
    }

    deinit {
        kpg_deadline_free(deadline)
    }
}

/// A private bus connection, closed when the last user lets it go.
final class BusConnection: @unchecked Sendable {
    // @unchecked: GDBusConnection is thread-safe, and the pointer never changes.
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        BusConnection.close(pointer)
    }

    static func close(_ connection: OpaquePointer) {
        // Closing explicitly releases the socket now rather than whenever GDBus's worker lets go.
        g_dbus_connection_close(connection, nil, nil, nil)
        g_object_unref(UnsafeMutableRawPointer(connection))
    }
}

/// The keyring's bus connection, opened on first use and kept while it works, so that a host
/// decrypting many pushes does not reconnect for each.
final class ConnectionCache: Sendable {
    private let current = Locked<BusConnection?>(nil)

    func connection(to address: String, deadline: Deadline, timeout: Duration) throws(KeyringError) -> BusConnection {
        if let cached = current.withLock({ $0 }), g_dbus_connection_is_closed(cached.pointer) == 0 {
            return cached
        }
        // Connect outside the lock: a stalled bus must cost each caller its own budget only.
        var error: UnsafeMutablePointer<GError>?
        guard let pointer = kps_connection_open(address, deadline.cancellable, &error) else {
            let message = error.map { String(cString: $0.pointee.message) } ?? "no detail"
            let cancelled = kps_error_kind(error) == KPS_ERROR_CANCELLED
            if let error { g_error_free(error) }
            if cancelled { throw .unreachable("the session bus did not answer within \(timeout.messageText)") }
            throw .unreachable("cannot connect to the session bus: \(message)")
        }
        let fresh = BusConnection(taking: pointer)
        return current.withLock { cached in
            if let cached, g_dbus_connection_is_closed(cached.pointer) == 0 { return cached }
            cached = fresh
            return fresh
        }
    }

    /// Forgets `connection` if it is the cached one.
    func discard(_ connection: BusConnection) {
        current.withLock { cached in
            if cached === connection { cached = nil }
        }
    }
}
