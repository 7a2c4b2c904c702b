/// A cache of at most `capacity` values that evicts the least recently used one to make room.
///
/// Values live in a fixed block of slots, linked from the most to the least recently used, and
/// are changed in place (a value that owns a buffer is never copied to be changed); a look-up is
/// one hash and a few index updates, and nothing is allocated once the cache is full. An evicted
/// value is released at once (a ``SecureBytes`` in it is wiped then, unless something else holds
/// it), and so is every value when the cache goes away.
///
/// A reference type, not thread-safe: one per thread (as the `--jsonl` runner keeps a scratch
/// per thread), or behind a lock.
package final class LRUCache<Key: Hashable, Value> {
    /// The most values kept.
    package let capacity: Int
    private var slots: [Key: Int] = [:]
    private var keys: [Key?]
    /// `capacity` slots, the first `used` initialized.
    private let values: UnsafeMutablePointer<Value>
    /// Towards the more and the less recently used slot; -1 at either end.
    private var newer: [Int]
    private var older: [Int]
    private var newest = -1
    private var oldest = -1
    private var used = 0
    /// Values made so far, evictions counted in.
    package private(set) var misses = 0

    /// A cache that keeps up to `capacity` values (at least 1).
    package init(capacity: Int) {
        self.capacity = max(1, capacity)
        keys = Array(repeating: nil, count: self.capacity)
        values = .allocate(capacity: self.capacity)
        newer = Array(repeating: -1, count: self.capacity)
        older = Array(repeating: -1, count: self.capacity)
        slots.reserveCapacity(self.capacity)
    }

    deinit {
        values.deinitialize(count: used)
        values.deallocate()
    }

    /// The number of values kept.
    package var count: Int { used }

    /// Whether a value is kept for `key` (without making it the most recently used).
    package func contains(_ key: Key) -> Bool { slots[key] != nil }

    /// Calls `body` with the value kept for `key`, in place; it becomes the most recently used.
    /// When there is none, `defaultValue` makes it first (and only then), and when the cache is
    /// full the least recently used value is released to make room.
    package func withValue<R, E: Error>(
        for key: Key, default defaultValue: @autoclosure () -> Value, _ body: (inout Value) throws(E) -> R
    ) throws(E) -> R {
        let slot: Int
        if let found = slots[key] {
            slot = found
            if slot != newest {
                unlink(slot)
                linkNewest(slot)
            }
        } else {
            misses += 1
            if used < capacity {
                slot = used
                (values + slot).initialize(to: defaultValue())
                used += 1
            } else {
                slot = oldest
                unlink(slot)
                slots[keys[slot]!] = nil
                // The evicted value is released here, before the new one is made.
                (values + slot).deinitialize(count: 1)
                (values + slot).initialize(to: defaultValue())
            }
            keys[slot] = key
            slots[key] = slot
            linkNewest(slot)
        }
        return try body(&values[slot])
    }

    /// Releases every value.
    package func removeAll() {
        slots.removeAll(keepingCapacity: true)
        values.deinitialize(count: used)
        for slot in 0..<used { keys[slot] = nil }
        newest = -1
        oldest = -1
        used = 0
    }

    /// The keys from the most to the least recently used (for tests).
    package var keysByRecency: [Key] {
        var result: [Key] = []
        var slot = newest
        while slot >= 0 {
            result.append(keys[slot]!)
            slot = older[slot]
        }
        return result
    }

    private func unlink(_ slot: Int) {
        let before = newer[slot]
        let after = older[slot]
        if before >= 0 { older[before] = after } else { newest = after }
        if after >= 0 { newer[after] = before } else { oldest = before }
        newer[slot] = -1
        older[slot] = -1
    }

    private func linkNewest(_ slot: Int) {
        newer[slot] = -1
        older[slot] = newest
        if newest >= 0 { newer[newest] = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }
}
