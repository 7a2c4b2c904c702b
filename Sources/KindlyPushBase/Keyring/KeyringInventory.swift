/// What a start line says of a keyring's device keys (a Redis worker's, the desktop agent's).
package enum KeyringInventory: Sendable {
    /// The keyring listed this many keys.
    case keys(Int)
    /// Locked or unreachable: waiting may mend it (a worker's entries wait).
    case uncounted(KeyringError)
    /// It cannot list its keys for a reason that waiting does not mend.
    case unreadable(KeyringError)

    /// The device keys of `keyring`, counted once for a start line.
    package init(of keyring: any Keyring) {
        do throws(KeyringError) {
            self = .keys(try keyring.list().count)
        } catch {
            self = error.isTransient ? .uncounted(error) : .unreadable(error)
        }
    }

    /// `with 3 keys`, `(keys not counted: …)`, `cannot list its keys: …`.
    package var phrase: String {
        switch self {
        case .keys(let count): return "with \(count) key\(count == 1 ? "" : "s")"
        case .uncounted(let error): return "(keys not counted: \(error))"
        case .unreadable(let error): return "cannot list its keys: \(error)"
        }
    }

    /// `file keyring (FOLDER)`, `secret-service keyring`: how notes on standard error name it.
    package static func description(of keyring: any Keyring) -> String {
        if let caching = keyring as? CachingKeyring { return description(of: caching.base) }
        let location = (keyring as? FileKeyring).map { " (\($0.folder))" } ?? (keyring as? KeyFileKeyring).map { " (\($0.path))" } ?? ""
        return "\(keyring.name) keyring\(location)"
    }
}
