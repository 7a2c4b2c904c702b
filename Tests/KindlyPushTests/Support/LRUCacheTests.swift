import KindlyPushCore
import Testing

@Suite("The least-recently-used cache", .offThePool)
struct LRUCacheTests {
    @Test("it keeps at most its capacity and evicts the least recently used, a look-up counting as a use")
    func evictionOrder() {
        let cache = LRUCache<Int, String>(capacity: 3)
        var made: [Int] = []
        func get(_ key: Int) -> String {
            cache.withValue(
                for: key,
                default: {
                    made.append(key)
                    return "v\(key)"
                }()
            ) { $0 }
        }
        #expect(get(1) == "v1" && get(2) == "v2" && get(3) == "v3")
        #expect(cache.keysByRecency == [3, 2, 1])
        #expect(get(1) == "v1")  // 1 is now the most recent, 2 the least
        #expect(cache.keysByRecency == [1, 3, 2])
        #expect(get(4) == "v4")  // evicts 2
        #expect(cache.count == 3)
        #expect(!cache.contains(2) && cache.contains(1) && cache.contains(3) && cache.contains(4))
        #expect(cache.keysByRecency == [4, 1, 3])
        #expect(get(2) == "v2")  // made again; evicts 3
        #expect(made == [1, 2, 3, 4, 2])
        #expect(cache.misses == 5)
        #expect(cache.keysByRecency == [2, 4, 1])
    }

    @Test("a value is changed in place, and the change is kept")
    func inPlace() {
        let cache = LRUCache<String, [Int]>(capacity: 2)
        cache.withValue(for: "a", default: []) { $0.append(1) }
        cache.withValue(for: "a", default: []) { $0.append(2) }
        #expect(cache.withValue(for: "a", default: []) { $0 } == [1, 2])
        #expect(cache.misses == 1)
    }

    @Test("a long random workload matches a plain list model")
    func matchesModel() {
        let cache = LRUCache<Int, Int>(capacity: 7)
        var model: [(key: Int, value: Int)] = []  // most recent first
        var modelMisses = 0
        var generator = SystemRandomNumberGenerator()
        for step in 0..<20_000 {
            let key = Int.random(in: 0..<12, using: &generator)
            // The default is the step, so a hit (the value stored at an earlier step) and a miss differ.
            let value = cache.withValue(for: key, default: step) { $0 }
            let stored = model.first { $0.key == key }?.value
            if stored == nil { modelMisses += 1 }
            #expect(value == (stored ?? step))
            model.removeAll { $0.key == key }
            model.insert((key, stored ?? step), at: 0)
            if model.count > 7 { model.removeLast() }
        }
        #expect(cache.keysByRecency == model.map(\.key))
        #expect(cache.misses == modelMisses)
    }

    @Test("a secret in an evicted value is wiped at eviction, and the rest when the cache goes away")
    func wipesOnEviction() {
        let recorder = WipeRecorder()
        recorder.observing {
            let cache = LRUCache<Int, SecureBytes>(capacity: 2)
            for key in 0..<3 {
                cache.withValue(
                    for: key, default: SecureBytes(count: 41) { $0.initializeMemory(as: UInt8.self, repeating: UInt8(0xA0 + key)) }
                ) {
                    _ = $0
                }
            }
            // Key 0 was evicted to make room for key 2: its buffer was wiped then.
            let wiped = recorder.buffers.withLock { $0 }.filter { $0.count == 41 }
            #expect(wiped.count == 1)
            #expect(wiped.allSatisfy { $0.allSatisfy { $0 == 0 } })
            cache.removeAll()
            #expect(recorder.buffers.withLock { $0 }.filter { $0.count == 41 }.count == 3)
        }
    }
}
