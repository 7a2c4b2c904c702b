public import KindlyPush
internal import KindlyPushCore

/// Runs code with the process's default keyring (`KindlyPushDecryption.defaultKeyring`) set, one
/// such run at a time in the process: tests that run in parallel and each set the default keyring
/// would otherwise see one another's, or none. The keyring is put back as it was at the end.
///
/// ```swift
/// try await withDefaultKeyring(InMemoryKeyring(keys: [key])) {
///     #expect(KindlyPushDecryption.decrypt(userInfo: userInfo) == payload)
/// }
/// ```
public func withDefaultKeyring<R>(_ keyring: (any Keyring)?, _ body: () async throws -> R) async rethrows -> R {
    await DefaultKeyringGate.shared.enter()
    let previous = KindlyPushDecryption.defaultKeyring
    KindlyPushDecryption.defaultKeyring = keyring
    defer {
        KindlyPushDecryption.defaultKeyring = previous
        DefaultKeyringGate.shared.leave()
    }
    return try await body()
}

/// One ``withDefaultKeyring(_:_:)`` at a time: the others wait their turn, in order, without
/// holding a thread.
final class DefaultKeyringGate: Sendable {
    static let shared = DefaultKeyringGate()
    private let state = Locked((busy: false, waiting: [CheckedContinuation<Void, Never>]()))

    func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state -> Bool in
                guard state.busy else {
                    state.busy = true
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if admitted { continuation.resume() }
        }
    }

    func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
