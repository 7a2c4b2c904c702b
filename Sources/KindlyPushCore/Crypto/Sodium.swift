internal import CSodium

/// libsodium must be initialised once per process before any primitive runs.
///
/// A Swift global is initialised lazily and exactly once, under `swift_once`, so every
/// primitive touches `Sodium.ready` first and concurrent first uses are safe.
package enum Sodium {
    package static let ready: Void = {
        guard sodium_init() >= 0 else {
            fatalError("libsodium could not be initialised")
        }
        // The hash states live in buffers of a constant size (on the stack): this libsodium's must fit.
        precondition(
            crypto_generichash_statebytes() <= BLAKE2b.stateCapacity
                && crypto_auth_hmacsha256_statebytes() <= HMACSHA256.stateSize,
            "libsodium's hash states are larger than this build allows for")
    }()

    /// Fills `buffer` with bytes from the operating system's CSPRNG.
    package static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
        _ = ready
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }

    /// `count` fresh random bytes. For nonces and other public values; secrets use ``SecureBytes/random(count:)``.
    package static func randomBytes(count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            fillRandom(UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
    }

    /// Constant-time equality, so that comparing secrets leaks no timing.
    package static func constantTimeEquals(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        _ = ready
        guard lhs.count == rhs.count else { return false }
        guard lhs.count > 0 else { return true }
        return sodium_memcmp(lhs.baseAddress!, rhs.baseAddress!, lhs.count) == 0
    }

    /// `count` bytes from `sodium_malloc`: pages of their own between guard pages, locked in RAM
    /// and excluded from core dumps; `nil` when the system refuses the mapping.
    package static func guardedAllocate(_ count: Int) -> UnsafeMutableRawPointer? {
        _ = ready
        return sodium_malloc(count)
    }

    /// Frees what ``guardedAllocate(_:)`` gave (`sodium_free` wipes it too).
    package static func guardedFree(_ pointer: UnsafeMutableRawPointer) {
        sodium_free(pointer)
    }

    /// Wipes memory in a way the optimiser cannot remove.
    package static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        sodium_memzero(base, buffer.count)
    }
}
