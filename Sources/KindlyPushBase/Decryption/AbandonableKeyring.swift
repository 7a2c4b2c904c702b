internal import KindlyPushCore

/// The keyring a stream's threads ask (``KindlyPushDecryption/decryptStream(_:jobs:)``): the
/// stream's own keyring, with every look-up that may wait made on a detached thread of its own,
/// which the stream can give up when it ends (``LookupAbandonment``). A thread of the stream then
/// never waits for the keyring after the stream's end: a look-up not answered yet fails at once,
/// and its answer, when it comes, is dropped (a key's secure storage wiped as it is released).
///
/// What cannot wait is asked directly, with no thread: a ``CachingKeyring``'s remembered answers
/// between two checks (so a cached stream makes a thread only when a check is due, at most every
/// `changeCheckInterval`), and the keyrings that hold their keys in memory.
final class AbandonableKeyring: Keyring {
    let base: any Keyring
    let abandonment: LookupAbandonment

    /// `keyring` behind the abandonment, unless none of its look-ups can wait (a keyring that
    /// holds its keys in memory), which is then asked directly.
    static func wrapping(_ keyring: any Keyring, _ abandonment: LookupAbandonment) -> any Keyring {
        if keyring is InMemoryKeyring || keyring is KeyFileKeyring { return keyring }
        return AbandonableKeyring(keyring, abandonment)
    }

    private init(_ base: any Keyring, _ abandonment: LookupAbandonment) {
        self.base = base
        self.abandonment = abandonment
    }

    var name: String { base.name }

    func key(for kid: KeyID) throws(KeyringError) -> DeviceKey {
        if let caching = base as? CachingKeyring, let known = caching.rememberedWithoutAsking(kid) { return try known.get() }
        let base = self.base
        return try abandonment.run(name) { () throws(KeyringError) in try base.key(for: kid) }
    }

    func pinnedSenders() throws(KeyringError) -> [PinnedSender] {
        if let caching = base as? CachingKeyring, let known = caching.rememberedPinsWithoutAsking() { return known }
        let base = self.base
        return try abandonment.run(name) { () throws(KeyringError) in try base.pinnedSenders() }
    }

    func store(_ key: DeviceKey, label: String) throws(KeyringError) { try base.store(key, label: label) }
    func list() throws(KeyringError) -> [KeyringEntry] { try base.list() }
    func delete(_ kid: KeyID) throws(KeyringError) { try base.delete(kid) }
    func pinSender(_ key: SenderPublicKey, label: String) throws(KeyringError) { try base.pinSender(key, label: label) }
    func unpinSender(_ sid: SenderID) throws(KeyringError) { try base.unpinSender(sid) }
    func changeToken() -> KeyringChangeToken? { base.changeToken() }
}

/// The look-ups of one stream that its end gives up: ``run(_:_:)`` asks the keyring on a
/// detached thread and waits for the answer or for ``abandon()``, whichever comes first; after
/// ``abandon()`` every look-up fails at once.
final class LookupAbandonment: Sendable {
    private struct State: Sendable {
        var abandoned = false
        var waiting: [ObjectIdentifier: any AbandonableWait] = [:]
    }

    private let state = Locked(State())

    /// Whether ``abandon()`` was called.
    var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Gives up every look-up that waits, and every later one.
    func abandon() {
        let waits = state.withLock { state -> [any AbandonableWait] in
            state.abandoned = true
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for wait in waits { wait.abandon() }
    }

    /// `body`'s answer, asked on a detached thread (on this one when the system refuses a
    /// thread); ``KeyringError/unreachable(_:)`` at once when the stream has ended, or as soon as
    /// it ends while `body` has not answered.
    func run<Value: Sendable>(_ keyring: String, _ body: @escaping @Sendable () throws(KeyringError) -> Value) throws(KeyringError)
        -> Value
    {
        let given = KeyringError.unreachable("the stream ended before the \(keyring) keyring answered; the look-up was given up")
        let wait = Handoff<Value>()
        let id = ObjectIdentifier(wait)
        guard
            state.withLock({ state -> Bool in
                guard !state.abandoned else { return false }
                state.waiting[id] = wait
                return true
            })
        else { throw given }
        defer { state.withLock { _ = $0.waiting.removeValue(forKey: id) } }
        let started = WorkerThread.detach { wait.answer(Result { () throws(KeyringError) in try body() }) }
        guard started else { return try body() }
        guard let answer = wait.wait() else { throw given }
        return try answer.get()
    }
}

/// A look-up's wait that ``LookupAbandonment/abandon()`` can end.
private protocol AbandonableWait: AnyObject, Sendable {
    func abandon()
}

/// One look-up's answer, handed from its thread to the waiting one, or given up.
private final class Handoff<Value: Sendable>: AbandonableWait {
    private enum Phase: Sendable {
        case waiting
        case answered(Result<Value, KeyringError>)
        case abandoned
    }

    private let phase = Locked(Phase.waiting)
    private let done = Semaphore()

    /// The look-up's thread: keeps the answer unless the wait was given up (then it is dropped).
    func answer(_ result: Result<Value, KeyringError>) {
        let kept = phase.withLock { phase -> Bool in
            guard case .waiting = phase else { return false }
            phase = .answered(result)
            return true
        }
        if kept { done.signal() }
    }

    func abandon() {
        let ended = phase.withLock { phase -> Bool in
            guard case .waiting = phase else { return false }
            phase = .abandoned
            return true
        }
        if ended { done.signal() }
    }

    /// The answer, or `nil` when the wait was given up.
    func wait() -> Result<Value, KeyringError>? {
        done.wait()
        return phase.withLock { phase -> Result<Value, KeyringError>? in
            guard case .answered(let result) = phase else { return nil }
            phase = .abandoned  // the answer is the waiter's now; the handoff keeps no copy
            return result
        }
    }
}
