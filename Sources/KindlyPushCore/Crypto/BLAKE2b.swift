internal import CSodium

/// Unkeyed BLAKE2b with a chosen output length (libsodium `crypto_generichash`).
///
/// The output length is BLAKE2b's own parameter: an 8-byte digest is not a truncated 32-byte one.
package enum BLAKE2b {
    /// The digest of `input` with `outputLength` bytes (16...64 for libsodium's generic hash, 8 is allowed too: 1...64).
    package static func hash(_ input: UnsafeRawBufferPointer, outputLength: Int) -> [UInt8] {
        _ = Sodium.ready
        precondition((1...64).contains(outputLength), "BLAKE2b output length must be 1...64")
        var digest = [UInt8](repeating: 0, count: outputLength)
        digest.withUnsafeMutableBytes { out in
            hash(input, into: out)
        }
        return digest
    }

    /// Keyed BLAKE2b (a MAC, libsodium `crypto_generichash` with a key of 16...64 bytes): the
    /// digest of `input` that only a holder of `key` can compute.
    package static func keyedHash(_ input: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer, outputLength: Int) -> [UInt8] {
        _ = Sodium.ready
        precondition((16...64).contains(outputLength), "BLAKE2b output length must be 16...64")
        precondition((16...64).contains(key.count), "a BLAKE2b key is 16...64 bytes")
        var digest = [UInt8](repeating: 0, count: outputLength)
        digest.withUnsafeMutableBytes { out in
            _ = crypto_generichash(
                out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count,
                input.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(input.count),
                key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count)
        }
        return digest
    }

    /// The digest of the concatenation of four inputs, written into `out` (1...64 bytes), without
    /// copying them into one buffer. The hash state, which depends on the secret inputs, lives on
    /// the stack and is wiped before returning.
    package static func hash(
        _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, _ c: UnsafeRawBufferPointer, _ d: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) {
        hashParts(into: out) { update in
            update(a)
            update(b)
            update(c)
            update(d)
        }
    }

    /// The same for six inputs (the key schedule of wire format version 2).
    package static func hash(
        _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer, _ c: UnsafeRawBufferPointer, _ d: UnsafeRawBufferPointer,
        _ e: UnsafeRawBufferPointer, _ f: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) {
        hashParts(into: out) { update in
            update(a)
            update(b)
            update(c)
            update(d)
            update(e)
            update(f)
        }
    }

    /// Runs `feed` with an `update` function on a stack hash state, finalises into `out`, wipes the state.
    @inline(__always)
    private static func hashParts(
        into out: UnsafeMutableRawBufferPointer, _ feed: ((UnsafeRawBufferPointer) -> Void) -> Void
    ) {
        _ = Sodium.ready
        precondition((1...64).contains(out.count), "BLAKE2b output length must be 1...64")
        // A constant size on the stack (a size known only at run time, or an alignment of 64,
        // sends the buffer to the heap: an allocation per hash); aligned to 64 by hand.
        withUnsafeTemporaryAllocation(byteCount: stateCapacity + 64, alignment: 16) { buffer in
            let base = buffer.baseAddress!.alignedUp(toMultipleOf: 64)
            let raw = UnsafeMutableRawBufferPointer(start: base, count: stateCapacity)
            let state = OpaquePointer(base)
            crypto_generichash_init(state, nil, 0, out.count)
            feed { part in
                guard let base = part.baseAddress, part.count > 0 else { return }
                crypto_generichash_update(state, base.assumingMemoryBound(to: UInt8.self), UInt64(part.count))
            }
            crypto_generichash_final(state, out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count)
            SecureBytes.wipeScratch(raw)
        }
    }

    /// Room for `crypto_generichash_statebytes()` (384 in every libsodium since 1.0.0; the state
    /// is an over-aligned C struct Swift does not import), checked when libsodium starts
    /// (``Sodium/ready``).
    static let stateCapacity = 384

    private static func hash(_ input: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        _ = crypto_generichash(
            out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count,
            input.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(input.count),
            nil, 0)
    }
}
