/// A cache of at most `capacity` values that evicts the least recently used one to make room.
///
/// Values live in a fixed array of slots, linked from the most to the least recently used; a
/// look-up is one hash and a few index updates, and nothing is allocated once the cache is full.
/// An evicted value is released at once (a ``SecureBytes`` in it is wiped then, unless something
/// else holds it), and so is every value when the cache goes away.
///
/// Not thread-safe: one per thread (as the `--jsonl` runner keeps a scratch per thread), or
/// behind a lock.
package struct LRUCache<Key: Hashable, Value> {
    /// The most values kept.
    package let capacity: Int
    private var slots: [Key: Int] = [:]
    private var keys: [Key?]
    private var values: [Value?]
    /// Towards the more and the less recently used slot; -1 at either end.
    private var newer: [Int]
    private var older: [Int]
    private var newest = -1
    private var oldest = -1
    /// Slots in use: 0..<used.
    private var used = 0
    /// Values made so far, evictions counted in.
    package private(set) var misses = 0

    /// A cache that keeps up to `capacity` values (at least 1).
    package init(capacity: Int) {
        self.capacity = max(1, capacity)
        keys = Array(repeating: nil, count: self.capacity)
        values = Array(repeating: nil, count: self.capacity)
        newer = Array(repeating: -1, count: self.capacity)
        older = Array(repeating: -1, count: self.capacity)
        slots.reserveCapacity(self.capacity)
    }

    /// The number of values kept.
    package var count: Int { used }

    /// Whether a value is kept for `key` (without making it the most recently used).
    package func contains(_ key: Key) -> Bool { slots[key] != nil }

    /// Calls `body` with the value kept for `key`, which becomes the most recently used. When
    /// there is none, `defaultValue` makes it first (and only then), and when the cache is full
    /// the least recently used value is released to make room.
    package mutating func withValue<R, E: Error>(
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
            let value = defaultValue()
            misses += 1
            if used < capacity {
                slot = used
                used += 1
            } else {
                slot = oldest
                unlink(slot)
                slots[keys[slot]!] = nil
                // Released here, before the new value takes the slot.
                values[slot] = nil
            }
            keys[slot] = key
            values[slot] = value
            slots[key] = slot
            linkNewest(slot)
        }
        return try body(&values[slot]!)
    }

    /// Releases every value.
    package mutating func removeAll() {
        slots.removeAll(keepingCapacity: true)
        for slot in 0..<used {
            keys[slot] = nil
            values[slot] = nil
        }
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

    private mutating func unlink(_ slot: Int) {
        let before = newer[slot]
        let after = older[slot]
        if before >= 0 { older[before] = after } else { newest = after }
        if after >= 0 { newer[after] = before } else { oldest = before }
        newer[slot] = -1
        older[slot] = -1
    }

    private mutating func linkNewest(_ slot: Int) {
        newer[slot] = -1
        older[slot] = newest
        if newest >= 0 { newer[newest] = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }
}

extension LRUCache: Sendable where Key: Sendable, Value: Sendable {}
