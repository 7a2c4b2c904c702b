internal import COpenSSL
package import KindlyPushCore

/// AES-128-GCM (NIST SP 800-38D) through libcrypto's EVP interface, with a 96-bit nonce and a
/// 128-bit tag: Web Push's `aes128gcm` content coding (RFC 8188). libsodium has AES-256-GCM only.
///
/// The cipher context holds the expanded key; `EVP_CIPHER_CTX_free` cleanses it. An opened
/// plaintext is written straight into a wiped buffer.
package enum AES128GCM {
    package static let keyLength = 16
    package static let nonceLength = 12
    package static let tagLength = 16

    /// libcrypto's AES-128-GCM, fetched once from the default provider (a fetch per message
    /// costs a lookup in the provider's tables).
    nonisolated(unsafe) private static let cipher: OpaquePointer? = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil)

    /// `ciphertext || tag` of `plaintext` under `key` (16 bytes) and `nonce` (12 bytes), no
    /// associated data.
    package static func seal(
        key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer
    ) throws(LibcryptoError) -> [UInt8] {
        precondition(key.count == keyLength && nonce.count == nonceLength, "AES-128-GCM takes a 16-byte key and a 12-byte nonce")
        var out = [UInt8](repeating: 0, count: plaintext.count + tagLength)
        try out.withMutableBytes { (out) throws(LibcryptoError) in
            try seal(key: key, nonce: nonce, plaintext: plaintext, into: out)
        }
        return out
    }

    /// ``seal(key:nonce:plaintext:)`` into `out` (`plaintext.count + 16` bytes), which may be the
    /// plaintext's own memory.
    package static func seal(
        key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) throws(LibcryptoError) {
        precondition(out.count == plaintext.count + tagLength)
        try withContext(key: key, nonce: nonce, encrypt: true) { (context) throws(LibcryptoError) in
            let base = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var written: Int32 = 0
            if plaintext.count > 0 {
                try check(
                    EVP_EncryptUpdate(
                        context, base, &written, plaintext.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(plaintext.count)),
                    "EVP_EncryptUpdate")
            }
            var final: Int32 = 0
            try check(EVP_EncryptFinal_ex(context, base + Int(written), &final), "EVP_EncryptFinal_ex")
            guard Int(written + final) == plaintext.count else { throw .failed("AES-128-GCM's length") }
            try check(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), base + plaintext.count), "EVP_CTRL_GCM_GET_TAG")
        }
    }

    /// The plaintext of `sealed` (`ciphertext || tag`), in a wiped buffer; `nil` when the tag
    /// does not verify (wrong key, nonce or bytes) or `sealed` is shorter than a tag.
    package static func open(
        key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer
    ) throws(LibcryptoError) -> SecureBytes? {
        precondition(key.count == keyLength && nonce.count == nonceLength, "AES-128-GCM takes a 16-byte key and a 12-byte nonce")
        guard sealed.count >= tagLength else { return nil }
        let length = sealed.count - tagLength
        return try withContext(key: key, nonce: nonce, encrypt: false) { (context) throws(LibcryptoError) -> SecureBytes? in
            var tag = [UInt8](sealed[length...])
            try check(EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag), "EVP_CTRL_GCM_SET_TAG")
            var verified = false
            let plaintext = try SecureBytes(count: length) { (out) throws(LibcryptoError) in
                let base = out.baseAddress?.assumingMemoryBound(to: UInt8.self)
                var written: Int32 = 0
                if length > 0 {
                    try check(
                        EVP_DecryptUpdate(context, base, &written, sealed.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(length)),
                        "EVP_DecryptUpdate")
                }
                var scratch = [UInt8](repeating: 0, count: 16)
                var final: Int32 = 0
                verified = EVP_DecryptFinal_ex(context, &scratch, &final) > 0 && final == 0 && Int(written) == length
                if !verified {
                    ERR_clear_error()
                    SecureBytes.wipeScratch(out)
                }
            }
            return verified ? plaintext : nil
        }
    }

    /// Runs `body` with a cipher context set up for `key` and `nonce`, freed (and cleansed) after.
    private static func withContext<R>(
        key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, encrypt: Bool,
        _ body: (OpaquePointer) throws(LibcryptoError) -> R
    ) throws(LibcryptoError) -> R {
        guard let cipher else { throw .failed("EVP_CIPHER_fetch(AES-128-GCM)") }
        guard let context = EVP_CIPHER_CTX_new() else { throw .failed("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }
        let keyBase = key.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let nonceBase = nonce.baseAddress!.assumingMemoryBound(to: UInt8.self)
        if encrypt {
            try check(EVP_EncryptInit_ex(context, cipher, nil, keyBase, nonceBase), "EVP_EncryptInit_ex")
        } else {
            try check(EVP_DecryptInit_ex(context, cipher, nil, keyBase, nonceBase), "EVP_DecryptInit_ex")
        }
        return try body(context)
    }
}
