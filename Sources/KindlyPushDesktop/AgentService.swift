internal import CDesktopShim
internal import CGLib
package import KindlyPush
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The desktop agent's own D-Bus service: the name `ai.kindly.Push1` on the session bus, object
/// `/ai/kindly/Push1`, interface `ai.kindly.Push1` (data/dbus/ai.kindly.Push1.xml), through which
/// a host app says its state (`SetAppState`), that it started (`Started`), and hears which chat a
/// tap opened (the signal `Opened`).
///
/// The calls are answered on a thread of the shim's own and queued; ``descriptor`` is readable
/// while any wait in ``takeCalls()``, so that the agent polls it beside its input. A call is
/// queued before it is answered: once a host's `SetAppState` returned, the next push the agent
/// reads is decided in that state.
package final class AgentService: @unchecked Sendable {
    // @unchecked: the shim guards its queue with a mutex; the pointer never changes.

    /// The well-known name.
    package static let busName = "ai.kindly.Push1"

    /// The longest chat id `SetAppState` takes, in bytes (no push carries a longer one); a longer
    /// one is refused with `org.freedesktop.DBus.Error.InvalidArgs` and not kept.
    package static let maximumChatIDBytes = Int(KPD_SERVICE_MAX_CHAT_ID)

    /// The most calls that wait for the agent to take them; one more is refused with
    /// `org.freedesktop.DBus.Error.LimitsExceeded`.
    package static let maximumQueuedCalls = Int(KPD_SERVICE_MAX_QUEUED)

    /// What a host asked.
    package enum Call: Sendable, Equatable {
        /// `SetAppState(state, chat_id)`: `chatOnScreen` is `nil` for `""`.
        case setAppState(DisplayRules.AppState, chatOnScreen: String?)
        /// `Started()`.
        case started
    }

    /// Why the service could not be started.
    package enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// Another connection owns `ai.kindly.Push1`: another agent runs.
        case nameTaken(String)
        /// No bus, or it refused.
        case unavailable(String)

        package var description: String {
            switch self {
            case .nameTaken(let text), .unavailable(let text): return text
            }
        }
    }

    private let service: OpaquePointer

    /// Exports the object and takes the name on the bus at `busAddress` (the session bus by default).
    package init(busAddress: String? = nil, timeout: Duration = DesktopNotifier.defaultTimeout) throws(Failure) {
        guard let address = busAddress ?? DesktopNotifier.sessionBusAddress() else {
            throw .unavailable("no session bus: DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist")
        }
        let budget = DesktopDeadline(timeout)
        var taken: gboolean = 0
        var error: UnsafeMutablePointer<GError>?
        guard let service = kpd_service_new(address, budget.cancellable, &taken, &error) else {
            let message = error.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "no detail"
            if let error { g_error_free(error) }
            if taken != 0 { throw .nameTaken("\(AgentService.busName) is taken on the session bus: another agent runs already") }
            throw .unavailable("cannot own \(AgentService.busName) on the session bus: \(message)")
        }
        self.service = service
    }

    deinit {
        kpd_service_free(service)
    }

    /// The interface the service exports, as introspection XML.
    package static var introspectionXML: String { String(cString: kpd_service_introspection_xml()) }

    /// Readable while calls wait in ``takeCalls()``; `poll` it with `POLLIN`.
    package var descriptor: Int32 { kpd_service_fd(service) }

    /// The calls that arrived since the last time, oldest first. Never blocks.
    package func takeCalls() -> [Call] {
        var calls: [Call] = []
        var call = KpdServiceCall()
        while kpd_service_take(service, &call) != 0 {
            defer { kpd_service_call_clear(&call) }
            switch call.kind {
            case KPD_SERVICE_SET_APP_STATE:
                let state = call.state.map { String(cString: $0) }.flatMap(DisplayRules.AppState.init(rawValue:)) ?? .killed
                let chat = call.chat_id.map { String(cString: $0) } ?? ""
                calls.append(.setAppState(state, chatOnScreen: chat.isEmpty ? nil : chat))
            default:
                calls.append(.started)
            }
        }
        return calls
    }

    /// The read end of a pipe that gets one byte for each SIGTERM or SIGINT from now on (the
    /// handler only writes it): poll it to end between two pushes. -1 when no pipe could be made.
    package static func signalPipe() -> Int32 { kpd_signal_pipe() }

    /// Emits `Opened(chatId)` (`""` when no chat is known). False when it could not be sent.
    @discardableResult
    package func emitOpened(_ chatId: String?) -> Bool {
        var error: UnsafeMutablePointer<GError>?
        let sent = kpd_service_emit_opened(service, chatId ?? "", &error) != 0
        if let error { g_error_free(error) }
        return sent
    }
}
