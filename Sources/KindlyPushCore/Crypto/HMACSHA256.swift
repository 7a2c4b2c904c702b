internal import CSodium

/// HMAC-SHA256 (RFC 2104) through libsodium's `crypto_auth_hmacsha256_*`, and HKDF-SHA256
/// (RFC 5869) built on it, for HPKE (RFC 9180).
///
/// The inputs are fed in parts, so that a secret is never copied into a buffer of its own; the
/// HMAC state, which is derived from the key, lives on the stack and is wiped before returning.
package enum HMACSHA256 {
    /// The length of a tag, and of HKDF-SHA256's `Nh`.
    package static let outputLength = 32

    /// `HMAC(key, part₁ || part₂ || …)` written into `out` (at most 32 bytes: a longer tag is cut
    /// to `out.count`, as HKDF-Expand cuts its last block). `feed` appends each part to the ``Message``.
    package static func authenticate(
        key: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, _ feed: (Message) -> Void
    ) {
        withState(key: key) { state in authenticate(state: state, into: out, feed) }
    }

    /// Runs `body` with the HMAC state keyed by `key` (RFC 2104's inner and outer pads already
    /// hashed), on the stack and wiped after: several HMACs under one key (HKDF-Expand's `key`
    /// and `base_nonce` from one PRK) each start from it (``authenticate(state:into:_:)``)
    /// instead of hashing the key's pads again.
    ///
    /// The empty key's state (HKDF-Extract's empty salt: DHKEM's `eae_prk` on every version 3
    /// push) is public and made once.
    package static func withState<R>(key: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        guard key.count > 0 else { return emptyKeyState.withUnsafeBytes(body) }
        return withUnsafeTemporaryAllocation(byteCount: stateSize, alignment: 16) { raw in
            defer { SecureBytes.wipeScratch(raw) }
            initialize(raw, key: key)
            return body(UnsafeRawBufferPointer(raw))
        }
    }

    /// Keys the state in `raw` with `key` (RFC 2104's pads hashed).
    private static func initialize(_ raw: UnsafeMutableRawBufferPointer, key: UnsafeRawBufferPointer) {
        _ = Sodium.ready
        let state = raw.baseAddress!.bindMemory(to: crypto_auth_hmacsha256_state.self, capacity: 1)
        // An empty key is the HashLen zero bytes of RFC 5869 section 2.2: HMAC pads both the same.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1) { none in
            let keyBase = key.count > 0 ? key.baseAddress!.assumingMemoryBound(to: UInt8.self) : UnsafePointer(none.baseAddress!)
            crypto_auth_hmacsha256_init(state, keyBase, key.count)
        }
    }

    /// `HMAC(key, part₁ || part₂ || …)` from the state ``withState(key:_:)`` keyed, which is
    /// copied (and the copy wiped), so that the state serves again.
    package static func authenticate(
        state keyed: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, _ feed: (Message) -> Void
    ) {
        precondition(keyed.count == stateSize && (1...outputLength).contains(out.count), "an HMAC-SHA256 output is 1...32 bytes")
        withUnsafeTemporaryAllocation(byteCount: stateSize + outputLength, alignment: 16) { raw in
            defer { SecureBytes.wipeScratch(raw) }
            raw.copyMemory(from: keyed)
            let state = raw.baseAddress!.bindMemory(to: crypto_auth_hmacsha256_state.self, capacity: 1)
            let tag = raw.baseAddress!.advanced(by: stateSize).assumingMemoryBound(to: UInt8.self)
            feed(Message(state: state))
            crypto_auth_hmacsha256_final(state, tag)
            out.copyMemory(from: UnsafeRawBufferPointer(start: tag, count: out.count))
        }
    }

    /// The state keyed by the empty key (``withState(key:_:)``).
    private static let emptyKeyState: [UInt8] = {
        var state = [UInt8](repeating: 0, count: stateSize)
        state.withUnsafeMutableBytes { initialize($0, key: UnsafeRawBufferPointer(start: nil, count: 0)) }
        return state
    }()

    /// HKDF-Extract(salt, IKM) of RFC 5869 (`HMAC(salt, IKM)`, an empty salt being 32 zero bytes),
    /// with the IKM fed in parts; writes the 32-byte PRK into `out`.
    package static func extract(
        salt: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, ikm: (Message) -> Void
    ) {
        precondition(out.count == outputLength)
        authenticate(key: salt, into: out, ikm)
    }

    /// HKDF-Expand(PRK, info, L) of RFC 5869 for `L = out.count` ≤ 32, the only lengths HPKE's
    /// cipher suite asks for: `T(1) = HMAC(PRK, info || 0x01)`, cut to `L`, from the state
    /// ``withState(key:_:)`` keyed with the PRK (several expansions of one PRK hash its pads
    /// once). The info is fed in parts.
    package static func expand(
        prkState: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, info: (Message) -> Void
    ) {
        authenticate(state: prkState, into: out) { message in
            info(message)
            withUnsafeBytes(of: UInt8(1)) { message.append($0) }
        }
    }

    /// The message of an HMAC being computed, given in parts: each ``append(_:)`` hashes one
    /// part into the state (no copy of the parts into one buffer). A value, not a closure, so
    /// that a caller hands it on to its own caller's parts without a closure made per HMAC.
    package struct Message {
        fileprivate let state: UnsafeMutablePointer<crypto_auth_hmacsha256_state>

        /// Hashes `part` into the message.
        package func append(_ part: UnsafeRawBufferPointer) {
            guard let base = part.baseAddress, part.count > 0 else { return }
            crypto_auth_hmacsha256_update(state, base.assumingMemoryBound(to: UInt8.self), UInt64(part.count))
        }

        /// Hashes `text`'s UTF-8 bytes into the message (a label: a constant in the binary).
        package func append(_ text: StaticString) {
            crypto_auth_hmacsha256_update(state, text.utf8Start, UInt64(text.utf8CodeUnitCount))
        }
    }

    /// Room for `crypto_auth_hmacsha256_statebytes()` (208 in every libsodium since 1.0.0),
    /// rounded up to keep the tag behind it aligned; checked when libsodium starts
    /// (``Sodium/ready``). A constant, so that the states live on the stack: a size known only at
    /// run time sends them to the heap, an allocation per HMAC.
    package static let stateSize = 208
}

/// SHA-256 (FIPS 180-4) through libsodium's `crypto_hash_sha256`, for public data (Web Push's
/// `Topic` of a collapse id too long for the header).
package enum SHA256Digest {
    package static let length = 32

    /// The 32-byte digest of `bytes`.
    package static func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        _ = Sodium.ready
        var out = [UInt8](repeating: 0, count: length)
        out.withUnsafeMutableBytes { out in
            _ = crypto_hash_sha256(
                out.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                UInt64(bytes.count))
        }
        return out
    }
}
