import CFuzzSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A libFuzzer test function: gets one input, returns 0 (or -1 to keep it out of the corpus).
public typealias FuzzTestFunction = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32

/// Runs libFuzzer on `test` with the process's arguments (libFuzzer flags, corpus folders or
/// files to replay) and exits with its status. A broken invariant aborts, which libFuzzer reports
/// as a crash and saves as a reproducer.
public func runFuzzer(_ test: FuzzTestFunction) -> Never {
    // The Swift runtime's backtracer takes SIGABRT and SIGILL (failed invariants, runtime traps)
    // before libFuzzer can, and libFuzzer then never saves the input. It is read at start-up,
    // so turn it off and start again.
    if getenv("SWIFT_BACKTRACE") == nil {
        setenv("SWIFT_BACKTRACE", "enable=no", 1)
        execv("/proc/self/exe", CommandLine.unsafeArgv)
        fail("cannot restart without the Swift backtracer: \(String(cString: strerror(errno)))")
    }
    guard sodium_init() >= 0 else { fail("sodium_init failed") }
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, test))
}

/// The input as a raw buffer (libFuzzer passes a null pointer for the empty input).
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(start: data, count: size)
}

/// Stops the run with `message` on standard error: libFuzzer saves the input as a crash.
public func fail(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    let text = Array("FUZZ INVARIANT BROKEN (\(file):\(line)): \(message())\n".utf8)
    _ = text.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    abort()
}

/// Fails unless `condition` holds.
public func require(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
) {
    if !condition() { fail(message(), file: file, line: line) }
}

/// An in-memory file that holds one input at a time, for code that reads a file descriptor.
public struct MemoryFile: Sendable {
    public let descriptor: Int32

    public init(name: String) {
        descriptor = kindly_fuzz_memfd(name)
        guard descriptor >= 0 else { fail("memfd_create failed: \(String(cString: strerror(errno)))") }
    }

    /// Replaces the contents with `bytes` and rewinds to the start.
    public func reset(to bytes: UnsafeRawBufferPointer) {
        guard ftruncate(descriptor, 0) == 0 else { fail("ftruncate failed") }
        var written = 0
        while written < bytes.count {
            let count = pwrite(descriptor, bytes.baseAddress! + written, bytes.count - written, off_t(written))
            guard count > 0 else { fail("pwrite failed") }
            written += count
        }
        guard lseek(descriptor, 0, SEEK_SET) == 0 else { fail("lseek failed") }
    }
}

/// libsodium called directly, for reference computations independent of the library's wrappers.
public enum RawSodium {
    /// `crypto_scalarmult_base`: the X25519 public key of `secretKey`.
    public static func scalarMultBase(_ secretKey: [UInt8]) -> [UInt8] {
        precondition(secretKey.count == 32)
        var out = [UInt8](repeating: 0, count: 32)
        guard crypto_scalarmult_base(&out, secretKey) == 0 else { fail("crypto_scalarmult_base failed") }
        return out
    }

    /// `crypto_scalarmult`: X25519(secretKey, publicKey), or `nil` for the all-zero result.
    public static func scalarMult(_ secretKey: [UInt8], _ publicKey: [UInt8]) -> [UInt8]? {
        precondition(secretKey.count == 32 && publicKey.count == 32)
        var out = [UInt8](repeating: 0, count: 32)
        guard crypto_scalarmult(&out, secretKey, publicKey) == 0 else { return nil }
        return out
    }

    /// Unkeyed BLAKE2b with an `outputLength`-byte digest (`crypto_generichash`).
    public static func blake2b(_ input: [UInt8], outputLength: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: outputLength)
        guard crypto_generichash(&out, outputLength, input, UInt64(input.count), nil, 0) == 0 else {
            fail("crypto_generichash failed")
        }
        return out
    }

    /// XChaCha20-Poly1305-IETF: ciphertext followed by the 16-byte tag.
    public static func seal(_ message: [UInt8], additionalData: [UInt8], nonce: [UInt8], key: [UInt8]) -> [UInt8] {
        precondition(nonce.count == 24 && key.count == 32)
        var out = [UInt8](repeating: 0, count: message.count + 16)
        var length: UInt64 = 0
        let status = crypto_aead_xchacha20poly1305_ietf_encrypt(
            &out, &length, message, UInt64(message.count), additionalData, UInt64(additionalData.count), nil, nonce, key)
        guard status == 0, length == UInt64(out.count) else { fail("crypto_aead_xchacha20poly1305_ietf_encrypt failed") }
        return out
    }

    /// XChaCha20-Poly1305-IETF opening; `nil` when the tag does not verify.
    public static func open(_ ciphertext: [UInt8], additionalData: [UInt8], nonce: [UInt8], key: [UInt8]) -> [UInt8]? {
        precondition(nonce.count == 24 && key.count == 32)
        guard ciphertext.count >= 16 else { return nil }
        var out = [UInt8](repeating: 0, count: ciphertext.count - 16)
        var length: UInt64 = 0
        let status = crypto_aead_xchacha20poly1305_ietf_decrypt(
            &out, &length, nil, ciphertext, UInt64(ciphertext.count), additionalData, UInt64(additionalData.count), nonce, key)
        guard status == 0 else { return nil }
        return out
    }

    /// HMAC-SHA256 (`crypto_auth_hmacsha256`), for the reference's HKDF (RFC 5869).
    public static func hmacSHA256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var state = crypto_auth_hmacsha256_state()
        var out = [UInt8](repeating: 0, count: 32)
        crypto_auth_hmacsha256_init(&state, key.isEmpty ? [UInt8](repeating: 0, count: 32) : key, key.isEmpty ? 32 : key.count)
        crypto_auth_hmacsha256_update(&state, message, UInt64(message.count))
        crypto_auth_hmacsha256_final(&state, &out)
        return out
    }

    /// ChaCha20-Poly1305-IETF (12-byte nonce) opening; `nil` when the tag does not verify.
    public static func openIETF(_ ciphertext: [UInt8], additionalData: [UInt8], nonce: [UInt8], key: [UInt8]) -> [UInt8]? {
        precondition(nonce.count == 12 && key.count == 32)
        guard ciphertext.count >= 16 else { return nil }
        var out = [UInt8](repeating: 0, count: ciphertext.count - 16)
        var length: UInt64 = 0
        let status = crypto_aead_chacha20poly1305_ietf_decrypt(
            &out, &length, nil, ciphertext, UInt64(ciphertext.count), additionalData, UInt64(additionalData.count), nonce, key)
        guard status == 0 else { return nil }
        return out
    }
}
