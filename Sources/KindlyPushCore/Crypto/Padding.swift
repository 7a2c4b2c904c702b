internal import CSodium

/// ISO/IEC 7816-4 padding through libsodium's `sodium_pad` / `sodium_unpad`:
/// one `0x80` byte, then `0x00` bytes up to a multiple of the block size; at least one byte is added.
package enum Padding {
    /// Copies `bytes` into `out` and pads them there to a multiple of `blockSize`; returns the
    /// padded length. `out` must hold it: `(bytes.count / blockSize + 1) * blockSize`.
    package static func pad(_ bytes: UnsafeRawBufferPointer, blockSize: Int, into out: UnsafeMutableRawBufferPointer) -> Int {
        _ = Sodium.ready
        let paddedLength = (bytes.count / blockSize + 1) * blockSize
        precondition(out.count >= paddedLength)
        if bytes.count > 0 { out.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        var resultLength = 0
        _ = sodium_pad(&resultLength, out.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count, blockSize, paddedLength)
        return resultLength
    }

    /// The length of the message inside `padded`, as `sodium_unpad` judges it: the last `blockSize`
    /// bytes must hold the `0x80` marker followed only by `0x00` bytes.
    package static func unpaddedLength(_ padded: UnsafeRawBufferPointer, blockSize: Int) throws(CryptoError) -> Int {
        _ = Sodium.ready
        guard let base = padded.baseAddress, padded.count > 0 else { throw .invalidPadding }
        var length = 0
        guard sodium_unpad(&length, base.assumingMemoryBound(to: UInt8.self), padded.count, blockSize) == 0 else {
            throw .invalidPadding
        }
        return length
    }
}
