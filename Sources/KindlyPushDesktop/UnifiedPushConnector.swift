internal import CDesktopShim
internal import CGLib
package import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// `org.unifiedpush.Connector2` on `/org/unifiedpush/Connector` under ``busName`` (UnifiedPush's
/// DBUS 0.3.0; docs/spec/wire-format.md section 9.4), and the calls to a distributor's
/// `org.unifiedpush.Distributor2` made from the same connection: a distributor takes a
/// registration only from the owner of the name it names. The agent serves it for as long as it
/// runs and lets a registration take the name meanwhile (getting it back after); `unifiedpush
/// register` holds it until `NewEndpoint` arrived. The shim answers on a thread of its own
/// (`Message` with `{"id": its id}`) and queues each call for ``takeCalls()``.
package final class UnifiedPushConnector: @unchecked Sendable {
    // @unchecked: the shim's queue has its mutex, and neither stored value changes.
    private let connector: OpaquePointer
    private let timeout: Duration

    /// The `service` of every registration: the name the connector serves under.
    package static let busName = "ai.kindly.Push"
    /// What every distributor's bus name begins with.
    package static let distributorPrefix = "org.unifiedpush.Distributor."
    /// The longest `Message` taken, in bytes (the specification's 4096).
    package static let maximumMessageBytes = Int(KPD_CONNECTOR_MAX_MESSAGE)

    /// What a distributor called.
    package enum Call: Sendable {
        /// `Message`: an RFC 8291 message for the registration `token`, the distributor's `id`.
        case message(token: String, id: String, body: SecureBytes)
        /// `NewEndpoint`: the registration's endpoint, new or again.
        case newEndpoint(token: String, endpoint: String)
        /// `Unregistered`: the registration ended.
        case unregistered(token: String)
    }

    /// A call and who made it: its caller's unique bus name, as the bus vouches for it. Any peer
    /// on the session bus can call the connector; only the registration's distributor is to be
    /// believed (``isFrom(_:_:)``).
    package struct Received: Sendable {
        package let sender: String
        package let call: Call
    }

    /// Why the connector could not be started (the name is taken, or no bus) or a call failed.
    package typealias Failure = AgentService.Failure

    /// Exports the object on the bus at `busAddress` (the session bus by default) and requests
    /// ``busName``: with `takingName`, from its owner (a registration), else letting a
    /// registration take it meanwhile (the agent).
    package init(busAddress: String? = nil, takingName: Bool, timeout: Duration = DesktopNotifier.defaultTimeout) throws(Failure) {
        guard let address = busAddress ?? DesktopNotifier.sessionBusAddress() else {
            throw .unavailable("no session bus: DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist")
        }
        let budget = DesktopDeadline(timeout)
        var taken: gboolean = 0
        var error: UnsafeMutablePointer<GError>?
        guard let connector = kpd_connector_new(address, Self.busName, takingName ? 1 : 0, budget.cancellable, &taken, &error) else {
            let message = Self.take(error)
            if taken != 0 { throw .nameTaken(message) }
            throw .unavailable("cannot own \(Self.busName) on the session bus: \(message)")
        }
        self.connector = connector
        self.timeout = timeout
    }

    deinit {
        kpd_connector_free(connector)
    }

    private static func take(_ error: UnsafeMutablePointer<GError>?) -> String {
        let message = error.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "no detail"
        if let error { g_error_free(error) }
        return message
    }

    /// Readable while the distributors' calls wait; `poll` it with `POLLIN`.
    package var descriptor: Int32 { kpd_connector_fd(connector) }

    /// What was called since the last time, oldest first, with who called it. Never blocks.
    package func takeCalls() -> [Received] {
        var taken: [Received] = []
        var next = KpdConnectorCall()
        while kpd_connector_take(connector, &next) != 0 {
            taken.append(Received(sender: next.sender.map { String(cString: $0) } ?? "", call: Self.call(next)))
            kpd_connector_call_clear(&next)
        }
        return taken
    }

    /// Whether `received` came from the owner of `distributor` (its well-known bus name) now;
    /// false when nobody owns it or the bus does not answer.
    package func isFrom(_ distributor: String, _ received: Received) -> Bool {
        var error: UnsafeMutablePointer<GError>?
        guard let owner = kpd_connector_name_owner(connector, distributor, DesktopDeadline.milliseconds(timeout, roundingUp: true), &error)
        else {
            _ = Self.take(error)
            return false
        }
        defer { g_free(owner) }
        return !received.sender.isEmpty && String(cString: owner) == received.sender
    }

    /// A queued call in Swift's terms (the message copied into a wiped buffer).
    private static func call(_ call: KpdConnectorCall) -> Call {
        func text(_ pointer: UnsafeMutablePointer<gchar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
        switch call.kind {
        case KPD_CONNECTOR_MESSAGE:
            let body = SecureBytes(copying: UnsafeRawBufferPointer(start: call.message, count: Int(call.message_length)))
            return .message(token: text(call.token), id: text(call.id), body: body)
        case KPD_CONNECTOR_NEW_ENDPOINT:
            return .newEndpoint(token: text(call.token), endpoint: text(call.endpoint))
        default:
            return .unregistered(token: text(call.token))
        }
    }

    /// The endpoint of the first `NewEndpoint` for `token` from `distributor` within `wait`
    /// (other calls, and calls from other peers, are dropped meanwhile), or `nil` when none came.
    package func endpoint(for token: String, from distributor: String, within wait: Duration) -> String? {
        let deadline = ContinuousClock.now.advanced(by: wait)
        while true {
            for received in takeCalls() {
                if case .newEndpoint(token, let endpoint) = received.call, isFrom(distributor, received) { return endpoint }
            }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return nil }
            // A wait that fails (the bus's descriptor gone) ends it: nothing more can come.
            do throws(Errno) {
                _ = try FileDescriptor(rawValue: descriptor).waitUntilReadable(
                    milliseconds: DesktopDeadline.milliseconds(left, roundingUp: true))
            } catch {
                return nil
            }
        }
    }

    /// The distributors on the bus: the names that begin with ``distributorPrefix``, sorted.
    package func distributors() throws(Failure) -> [String] {
        var error: UnsafeMutablePointer<GError>?
        guard let names = kpd_connector_distributors(connector, DesktopDeadline.milliseconds(timeout, roundingUp: true), &error) else {
            throw .unavailable("cannot list the bus's names: \(Self.take(error))")
        }
        defer { g_strfreev(names) }
        var found: [String] = []
        var index = 0
        while let name = names[index] {
            found.append(String(cString: name))
            index += 1
        }
        return found.sorted()
    }

    /// What `Register` answered: `nil` for `REGISTRATION_SUCCEEDED`, else the reason
    /// (`INTERNAL_ERROR`, `NETWORK`, `ACTION_REQUIRED`, `VAPID_REQUIRED`, `UNAUTHORIZED`).
    /// `vapid`: the application server's VAPID public key, for a distributor that asks for one.
    package func register(with distributor: String, token: String, description: String?, vapid: String? = nil) throws(Failure) -> String? {
        var success: UnsafeMutablePointer<gchar>?
        var reason: UnsafeMutablePointer<gchar>?
        var error: UnsafeMutablePointer<GError>?
        let milliseconds = DesktopDeadline.milliseconds(timeout, roundingUp: true)
        guard
            kpd_connector_register(
                connector, distributor, Self.busName, token, description, vapid, milliseconds, &success, &reason, &error) != 0
        else {
            throw .unavailable("\(distributor) did not answer Register: \(Self.take(error))")
        }
        defer {
            g_free(success)
            g_free(reason)
        }
        let answer = success.map { String(cString: $0) } ?? ""
        guard answer != "REGISTRATION_SUCCEEDED" else { return nil }
        return reason.map { String(cString: $0) } ?? (answer.isEmpty ? "no answer" : answer)
    }

    /// Calls `Unregister` with `token` on `distributor`.
    package func unregister(from distributor: String, token: String) throws(Failure) {
        var error: UnsafeMutablePointer<GError>?
        guard kpd_connector_unregister(connector, distributor, token, DesktopDeadline.milliseconds(timeout, roundingUp: true), &error) != 0
        else {
            throw .unavailable("\(distributor) did not answer Unregister: \(Self.take(error))")
        }
    }
}
