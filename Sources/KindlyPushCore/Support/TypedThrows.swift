// The standard library's `withUnsafeBytes` and `withUTF8` rethrow as `any Error`; these keep
// the closure's error type, so that typed throws reach the caller intact.

extension Array where Element == UInt8 {
    @inlinable package func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = withUnsafeBytes { raw in Result { () throws(E) in try body(raw) } }
        return try result.get()
    }

    @inlinable package mutating func withMutableBytes<R, E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = withUnsafeMutableBytes { raw in Result { () throws(E) in try body(raw) } }
        return try result.get()
    }
}

extension String {
    @inlinable package func withUTF8Bytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        var copy = self
        let result: Result<R, E> = copy.withUTF8 { utf8 in Result { () throws(E) in try body(UnsafeRawBufferPointer(utf8)) } }
        return try result.get()
    }
}
