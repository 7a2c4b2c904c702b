internal import CSodium

#if canImport(Glibc)
    import Glibc
#endif

/// A fixed-size buffer for secret material (secret keys, shared secrets, derived keys).
///
/// The bytes are written once, when the buffer is made, and are reachable afterwards only
/// inside ``withUnsafeBytes(_:)``. When the last copy goes away the storage is wiped with
/// `sodium_memzero` before it is freed, so a secret does not outlive its use. It never
/// becomes a `String`, and `description` never shows the bytes.
///
/// A long-lived secret (a device's secret key, held for a whole run) is kept in *guarded*
/// storage (``guarded()``): libsodium's `sodium_malloc`, pages of their own between guard pages,
/// locked in RAM (`mlock`, never swapped) and left out of core dumps (`MADV_DONTDUMP`). That
/// costs a few system calls per buffer, so short-lived buffers (a file's bytes, an ephemeral key
/// per push) stay on the ordinary heap, wiped all the same.
package struct SecureBytes: Sendable {
    // Immutable after init, so sharing it across threads is safe.
    package final class Storage: @unchecked Sendable {
        let buffer: UnsafeMutableRawBufferPointer
        /// From sodium_malloc (locked, not dumped, between guard pages), freed with sodium_free.
        let isGuarded: Bool

        init(count: Int, guarded: Bool = false) {
            let size = max(count, 1)
            if guarded, let pointer = Sodium.guardedAllocate(size) {
                buffer = UnsafeMutableRawBufferPointer(start: pointer, count: size)
                isGuarded = true
            } else {
                buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
                isGuarded = false
            }
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
        }

        deinit {
            Sodium.wipe(buffer)
            if let observer = SecureBytes.wipeObserver { observer(UnsafeRawBufferPointer(buffer)) }
            if isGuarded {
                Sodium.guardedFree(buffer.baseAddress!)
            } else {
                buffer.deallocate()
            }
        }
    }

    package let storage: Storage
    /// The number of secret bytes.
    package let count: Int

    /// Makes a buffer of `count` bytes and lets `initializer` write them.
    ///
    /// If `initializer` throws, the partly written buffer is wiped and the error rethrown.
    package init<E: Error>(
        count: Int,
        initializingWith initializer: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        let storage = Storage(count: count)
        try initializer(UnsafeMutableRawBufferPointer(rebasing: storage.buffer[0..<count]))
        self.storage = storage
        self.count = count
    }

    /// Whether the bytes are in guarded storage (locked in RAM, left out of core dumps).
    package var isGuarded: Bool { storage.isGuarded }

    /// These bytes in guarded storage: `self` when they are there already, else a guarded copy
    /// (this buffer is wiped when its last copy goes away, as always). For secrets that live
    /// long: a device's secret key.
    package func guarded() -> SecureBytes {
        if storage.isGuarded { return self }
        let copy = Storage(count: count, guarded: true)
        withUnsafeBytes { copy.buffer.copyMemory(from: $0) }
        return SecureBytes(storage: copy, count: count)
    }

    private init(storage: Storage, count: Int) {
        self.storage = storage
        self.count = count
    }

    /// Copies `bytes` into a new secure buffer. The caller remains responsible for its own copy.
    package init(copying bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count) { $0.copyMemory(from: bytes) }
    }

    /// `count` bytes from the operating system's CSPRNG.
    package static func random(count: Int) -> SecureBytes {
        SecureBytes(count: count) { Sodium.fillRandom($0) }
    }

    /// Calls `body` with the secret bytes. Do not let the pointer escape.
    package func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage.buffer[0..<count]))
    }

    /// Wipes a scratch buffer that held secrets outside a ``SecureBytes`` (a stack buffer for a
    /// shared secret and a derived key, a hash state), and reports it to the test hook as well.
    package static func wipeScratch(_ buffer: UnsafeMutableRawBufferPointer) {
        Sodium.wipe(buffer)
        if let observer = SecureBytes.wipeObserver { observer(UnsafeRawBufferPointer(buffer)) }
    }

    /// Test hook: called with a buffer's storage right after it was wiped and before it is freed
    /// (or with a scratch buffer just wiped), so that a test can observe the wipe. Thread-local:
    /// a test sees only the wipes of the thread that runs its body, and the hot path takes no
    /// lock to read it.
    ///
    /// Why not `@TaskLocal`: reading a task-local starts the concurrency runtime's task-local
    /// machinery in every run of the command line, for a hook that only tests set (at a
    /// cost in start-up memory); a `pthread_getspecific` costs nothing.
    static var wipeObserver: (@Sendable (UnsafeRawBufferPointer) -> Void)? {
        guard let box = pthread_getspecific(wipeObserverKey) else { return nil }
        return Unmanaged<WipeObserverBox>.fromOpaque(box).takeUnretainedValue().observer
    }

    /// Runs `body` with `observer` as this thread's ``wipeObserver``, then puts back the one before.
    package static func withWipeObserver<R, E: Error>(
        _ observer: @escaping @Sendable (UnsafeRawBufferPointer) -> Void, _ body: () throws(E) -> R
    ) throws(E) -> R {
        let previous = pthread_getspecific(wipeObserverKey)
        let box = Unmanaged.passRetained(WipeObserverBox(observer))
        pthread_setspecific(wipeObserverKey, box.toOpaque())
        defer {
            pthread_setspecific(wipeObserverKey, previous)
            box.release()
        }
        return try body()
    }

    private static let wipeObserverKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    private final class WipeObserverBox {
        let observer: @Sendable (UnsafeRawBufferPointer) -> Void
        init(_ observer: @escaping @Sendable (UnsafeRawBufferPointer) -> Void) { self.observer = observer }
    }
}

extension SecureBytes: Equatable {
    /// Constant-time comparison.
    package static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        lhs.withUnsafeBytes { l in rhs.withUnsafeBytes { r in Sodium.constantTimeEquals(l, r) } }
    }
}

extension SecureBytes: CustomStringConvertible, CustomDebugStringConvertible {
    package var description: String { "SecureBytes(\(count) bytes, redacted)" }
    package var debugDescription: String { description }
}
