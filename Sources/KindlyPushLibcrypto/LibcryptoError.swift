internal import COpenSSL

/// Why a libcrypto operation failed: which one, never the bytes it worked on (they may be
/// secret). OpenSSL's error queue is emptied and dropped: its lines may quote input.
package struct LibcryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    package let description: String

    package init(_ description: String) { self.description = description }

    /// The error of a failed libcrypto call `operation`, with OpenSSL's queue emptied.
    static func failed(_ operation: String) -> LibcryptoError {
        ERR_clear_error()
        return LibcryptoError("libcrypto: \(operation) failed")
    }
}

/// Throws ``LibcryptoError/failed(_:)`` unless `status` is OpenSSL's success, 1 (a positive value
/// when `positive`).
@inline(__always)
func check(_ status: Int32, _ operation: @autoclosure () -> String, positive: Bool = false) throws(LibcryptoError) {
    guard status == 1 || (positive && status > 0) else { throw .failed(operation()) }
}
