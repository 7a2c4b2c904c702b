extension Array where Element == UInt8 {
    /// Zeroes every byte this array's storage holds, its spare capacity included (which
    /// `removeAll(keepingCapacity: true)` leaves as it was), keeping its count (now zeros) and its
    /// capacity. For reused buffers that held plaintext or key material, once a run is over.
    package mutating func wipeCapacity() {
        let kept = count
        let capacity = self.capacity
        removeAll(keepingCapacity: true)
        append(contentsOf: repeatElement(0, count: capacity))
        withUnsafeMutableBytes { Sodium.wipe($0) }
        removeLast(capacity - kept)
    }
}
