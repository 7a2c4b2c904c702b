package import KindlyPushCore

/// The second shared secret of version 2, `ss_s = X25519(sk, spk)`, kept per (device key,
/// sender key) so that a device pays one X25519 per push in version 2 as in version 1 (wire
/// format section 7: "may be kept, in wiped memory, between pushes").
///
/// One cache serves the process (``shared``): the secret depends only on the two keys, so an
/// entry is found by the device key's and the sender key's bytes and is the same whichever
/// reader computed it. It is used only after the reader has read both keys from its keyring
/// for this push (reasons 4 and 5 come first), so a key that is gone is never used through it.
///
/// Secrets live in ``SecureBytes`` and are wiped when they leave the cache: when the device key
/// or the sender key is deleted from a keyring of this package (each one calls ``evict(kid:)`` /
/// ``evict(sid:)``), and when the cache is full. A reader does not evict: a key or pin it no
/// longer finds is refused before the cache is asked (reasons 4 and 5).
package final class SenderSecretCache: Sendable {
    /// The process's cache.
    package static let shared = SenderSecretCache()

    /// More entries than a device has keys times pinned senders; beyond it the oldest goes.
    package static let capacity = 64

    private struct Entry {
        var devicePublicKey: [UInt8]
        var binding: SenderBinding
    }

    private struct Name: Hashable {
        let kid: KeyID
        let sid: SenderID
    }

    private struct State {
        var entries: [Name: Entry] = [:]
        var order: [Name] = []
    }

    private let state = Locked(State())

    package init() {}

    /// The binding of `key` and `sender`, from the cache or computed now (and kept). Throws
    /// ``CryptoError/allZeroSharedSecret`` for a low-order sender key (never kept).
    package func binding(device key: DeviceKey, sender: SenderPublicKey) throws(CryptoError) -> SenderBinding {
        let name = Name(kid: key.kid, sid: sender.sid)
        let cached = state.withLock { state -> SenderBinding? in
            guard let entry = state.entries[name], entry.devicePublicKey == key.publicKey.rawRepresentation,
                entry.binding.publicKey == sender
            else { return nil }
            return entry.binding
        }
        if let cached { return cached }
        let binding = try SenderBinding(device: key, sender: sender)
        state.withLock { state in
            if state.entries.updateValue(Entry(devicePublicKey: key.publicKey.rawRepresentation, binding: binding), forKey: name) == nil {
                state.order.append(name)
            }
            while state.order.count > SenderSecretCache.capacity {
                state.entries.removeValue(forKey: state.order.removeFirst())
            }
        }
        return binding
    }

    /// Drops every secret of the device key `kid`.
    package func evict(kid: KeyID) {
        evict { $0.kid == kid }
    }

    /// Drops every secret of the sender key `sid`.
    package func evict(sid: SenderID) {
        evict { $0.sid == sid }
    }

    private func evict(where matches: (Name) -> Bool) {
        state.withLock { state in
            let names = state.order.filter(matches)
            guard !names.isEmpty else { return }
            for name in names { state.entries.removeValue(forKey: name) }
            state.order.removeAll(where: matches)
        }
    }

    /// Whether a secret of `kid` and `sid` is kept (for tests).
    package func contains(kid: KeyID, sid: SenderID) -> Bool {
        state.withLock { $0.entries[Name(kid: kid, sid: sid)] != nil }
    }
}
