internal import CDesktopShim
internal import CGLib
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// A client of the freedesktop Desktop Notifications service (`org.freedesktop.Notifications` on
/// the session bus: GNOME Shell, KDE Plasma, dunst, mako, xfce4-notifyd), through GDBus.
///
/// It posts notifications (`Notify`), reads what the server offers (`GetCapabilities`,
/// `GetServerInformation`), and reports the server's `ActionInvoked` and `NotificationClosed`
/// signals as `Event` values. It needs no GLib main loop: the signals are queued as they
/// arrive, and ``eventDescriptor`` becomes readable, so that a host can `poll` it beside its own
/// descriptors and call ``takeEvents()`` when it is readable.
///
/// - Every call runs under a time budget (``timeout``, 2 s by default): a missing bus, a missing
///   server or a server that never answers is an error within that budget, never a hang.
/// - The body is plain text: when the server advertises `body-markup`, `&`, `<` and `>` are
///   escaped, so that a message can never inject markup or links.
/// - Only the server that answered ``notify(_:)`` can report events: a signal that any other
///   client on the bus sends is ignored.
///
/// The value keeps one private bus connection (never the process-wide session bus singleton,
/// whose loss would exit the process) and may be used from several threads.
public final class DesktopNotifier: @unchecked Sendable {
    // @unchecked: GDBusConnection is thread-safe, the listener guards its queue with a mutex, and
    // the pointers never change.

    /// The time budget of one call unless the initialiser is given another.
    public static let defaultTimeout: Duration = .seconds(2)

    /// The most one call may take, from its start to its answer or its failure.
    public let timeout: Duration
    /// What the server said it supports (`GetCapabilities`), read when connecting: for instance
    /// `actions`, `body`, `body-markup`, `body-hyperlinks`, `persistence`.
    public let capabilities: Set<String>

    private let connection: OpaquePointer
    private let listener: OpaquePointer
    /// The bus's id and the unique name of the server that answers now.
    private let server: Locked<(busID: Substring, owner: Substring)>

    /// A notification to post.
    public struct Notification: Sendable, Equatable {
        /// One action: the key the server reports in `ActionInvoked`, and the label it shows.
        public struct Action: Sendable, Equatable {
            /// What `ActionInvoked` reports; `default` is a click on the notification itself.
            public var key: String
            /// What the server shows.
            public var label: String

            /// An action with `key` and `label`; the key `default` is what a click on the
            /// notification itself invokes.
            public init(key: String, label: String) {
                self.key = key
                self.label = label
            }
        }

        /// The application's name, as the server shows or groups it.
        public var appName: String
        /// The notification this one replaces (0: none). A server that no longer has it shows a
        /// new one.
        public var replacesID: UInt32
        /// An icon name or `file://` URI; empty for none.
        public var icon: String
        /// The title, plain text.
        public var summary: String
        /// The text, plain: escaped when the server reads markup.
        public var body: String
        /// Posted only when the server offers `actions`.
        public var actions: [Action]
        /// The standard `category` hint, such as `im.received`; `nil` for none.
        public var category: String?
        /// The `desktop-entry` hint: the host's `.desktop` file name without its suffix.
        public var desktopEntry: String?
        /// Milliseconds before the server closes it; -1 is the server's default, 0 never.
        public var expireTimeout: Int32
        /// The `x-dunst-stack-tag` hint: on a server that reads it, a notification with the tag
        /// (and app name) of one still on screen or waiting takes its place instead of adding
        /// one. `nil` for none.
        public var stackTag: String?
        /// The `image-path` hint: an image file's absolute path, shown with the notification
        /// where the server shows images (a server that does not ignores it). `nil` for none.
        public var imagePath: String?

        /// A notification with the given fields.
        public init(
            appName: String, summary: String, body: String, replacesID: UInt32 = 0, icon: String = "", actions: [Action] = [],
            category: String? = nil, desktopEntry: String? = nil, expireTimeout: Int32 = -1, stackTag: String? = nil,
            imagePath: String? = nil
        ) {
            self.appName = appName
            self.replacesID = replacesID
            self.icon = icon
            self.summary = summary
            self.body = body
            self.actions = actions
            self.category = category
            self.desktopEntry = desktopEntry
            self.expireTimeout = expireTimeout
            self.stackTag = stackTag
            self.imagePath = imagePath
        }
    }

    /// `GetServerInformation`.
    public struct ServerInformation: Sendable, Equatable {
        /// The server's product name, such as `dunst` or `gnome-shell`.
        public var name: String
        /// Who makes it.
        public var vendor: String
        /// The server's own version.
        public var version: String
        /// The version of the specification the server implements, such as `1.2`.
        public var specificationVersion: String
    }

    /// What the server reports about a notification this notifier posted.
    public enum Event: Sendable, Equatable {
        /// `ActionInvoked`: the user chose the action `key` (`default`: clicked the notification).
        case actionInvoked(id: UInt32, key: String)
        /// `NotificationClosed`, with the specification's reason: 1 expired, 2 dismissed by the
        /// user, 3 closed by `CloseNotification`, 4 undefined.
        case closed(id: UInt32, reason: UInt32)

        /// The notification the event is about.
        public var id: UInt32 {
            switch self {
            case .actionInvoked(let id, _), .closed(let id, _): return id
            }
        }
    }

    /// Connects to the session bus and asks the server for its capabilities, within `timeout`.
    ///
    /// - Parameters:
    ///   - busAddress: a D-Bus address; by default `DBUS_SESSION_BUS_ADDRESS`, else the socket
    ///     `$XDG_RUNTIME_DIR/bus` when it exists. (GLib would fall back to X11 autolaunch, which
    ///     starts a bus as a side effect; this client never does.)
    ///   - timeout: the time budget of each call, connecting included.
    public init(busAddress: String? = nil, timeout: Duration = DesktopNotifier.defaultTimeout) throws(DesktopNotifierError) {
        self.timeout = timeout
        guard let address = busAddress ?? DesktopNotifier.sessionBusAddress() else {
            throw .unreachable("no session bus: DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist")
        }
        let budget = DesktopDeadline(timeout)
        var error: UnsafeMutablePointer<GError>?
        guard let connection = kpd_connection_open(address, budget.cancellable, &error) else {
            throw DesktopNotifier.failure(error, "connect to the session bus", timeout: timeout)
        }
        guard let listener = kpd_listener_new(connection, &error) else {
            kpd_connection_close(connection)
            throw DesktopNotifier.failure(error, "listen for notification signals", timeout: timeout)
        }
        let names: Set<String>
        let identity: String
        do throws(DesktopNotifierError) {
            (names, identity) = try DesktopNotifier.handshake(connection, budget: budget, timeout: timeout)
        } catch {
            kpd_listener_free(listener)
            kpd_connection_close(connection)
            throw error
        }
        self.connection = connection
        self.listener = listener
        capabilities = names
        let parts = identity.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        server = Locked((parts[0], parts.count > 1 ? parts[1] : ""))
    }

    /// Subscribes to the server's broadcast signals, reads its capabilities (which starts a server
    /// that the bus can activate), and who it is.
    private static func handshake(
        _ connection: OpaquePointer, budget: DesktopDeadline, timeout: Duration
    ) throws(DesktopNotifierError) -> (capabilities: Set<String>, identity: String) {
        var error: UnsafeMutablePointer<GError>?
        guard kpd_add_match(connection, budget.milliseconds, budget.cancellable, &error) != 0 else {
            throw failure(error, "subscribe to notification signals", timeout: timeout)
        }
        guard let list = kpd_get_capabilities(connection, budget.milliseconds, budget.cancellable, &error) else {
            throw failure(error, "ask the notification server for its capabilities", timeout: timeout)
        }
        defer { g_strfreev(list) }
        var names: Set<String> = []
        var index = 0
        while let name = list[index] {
            names.insert(String(cString: name))
            index += 1
        }
        guard let identity = kpd_server_identity(connection, budget.milliseconds, budget.cancellable, &error) else {
            throw failure(error, "find the notification server on the bus", timeout: timeout)
        }
        defer { g_free(identity) }
        return (names, String(cString: identity))
    }

    deinit {
        kpd_listener_free(listener)
        kpd_connection_close(gConnection)
    }

    private var gConnection: OpaquePointer { connection }

    /// Which server answers: the bus's id and the server's unique name on it, as one text. It
    /// changes when the server or the bus is restarted, and a notification id means something
    /// only to the server that gave it: a store keeps the two together (`replaces_id` given to
    /// another server could replace some other application's notification).
    public var serverIdentity: String {
        server.withLock { "\($0.busID)/\($0.owner)" }
    }

    /// Whether the server reads markup in the body (then this notifier escapes it).
    public var readsBodyMarkup: Bool { capabilities.contains("body-markup") }

    /// Whether the server shows actions (then a notification's actions are posted).
    public var offersActions: Bool { capabilities.contains("actions") }

    /// `GetServerInformation`.
    public func serverInformation() throws(DesktopNotifierError) -> ServerInformation {
        let budget = DesktopDeadline(timeout)
        var name: UnsafeMutablePointer<gchar>?
        var vendor: UnsafeMutablePointer<gchar>?
        var version: UnsafeMutablePointer<gchar>?
        var specification: UnsafeMutablePointer<gchar>?
        var error: UnsafeMutablePointer<GError>?
        guard
            kpd_get_server_information(
                gConnection, budget.milliseconds, budget.cancellable, &name, &vendor, &version, &specification, &error) != 0
        else {
            throw DesktopNotifier.failure(error, "ask the notification server who it is", timeout: timeout)
        }
        defer {
            for text in [name, vendor, version, specification] { g_free(UnsafeMutableRawPointer(text)) }
        }
        func text(_ pointer: UnsafeMutablePointer<gchar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
        return ServerInformation(name: text(name), vendor: text(vendor), version: text(version), specificationVersion: text(specification))
    }

    /// Posts `notification` and returns the server's id for it (never 0). The body is escaped
    /// when the server reads markup; actions are left out when the server offers none.
    public func notify(_ notification: Notification) throws(DesktopNotifierError) -> UInt32 {
        let body = readsBodyMarkup ? DesktopNotifier.escapingMarkup(notification.body) : notification.body
        var actionStrings: [String] = []
        if offersActions {
            for action in notification.actions { actionStrings += [action.key, action.label] }
        }
        let budget = DesktopDeadline(timeout)
        var error: UnsafeMutablePointer<GError>?
        var server: UnsafeMutablePointer<gchar>?
        let id = withCStringArray(actionStrings) { list in
            // GLib's `const char *const *`: the same pointers, read only.
            list.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: actionStrings.count + 1) { actions in
                withOptionalCString(notification.category) { category in
                    withOptionalCString(notification.desktopEntry) { desktopEntry in
                        withOptionalCString(notification.stackTag) { stackTag in
                            withOptionalCString(notification.imagePath) { imagePath in
                                kpd_notify(
                                    gConnection, notification.appName, notification.replacesID, notification.icon, notification.summary,
                                    body, actions, category, desktopEntry, stackTag, imagePath, notification.expireTimeout,
                                    budget.milliseconds, budget.cancellable, &server, &error)
                            }
                        }
                    }
                }
            }
        }
        guard id != 0 else { throw DesktopNotifier.failure(error, "show a notification", timeout: timeout) }
        if let server {
            kpd_listener_set_server(listener, server)
            let owner = String(cString: server)
            self.server.withLock { $0.owner = Substring(owner) }
            g_free(server)
        }
        return id
    }

    /// `CloseNotification`: the server takes the notification `id` away.
    public func close(_ id: UInt32) throws(DesktopNotifierError) {
        let budget = DesktopDeadline(timeout)
        var error: UnsafeMutablePointer<GError>?
        guard kpd_close_notification(gConnection, id, budget.milliseconds, budget.cancellable, &error) != 0 else {
            throw DesktopNotifier.failure(error, "close a notification", timeout: timeout)
        }
    }

    /// A descriptor that is readable while events are waiting in ``takeEvents()``; `poll` it with
    /// `POLLIN`. It belongs to the notifier: do not read or close it.
    public var eventDescriptor: Int32 { kpd_listener_fd(listener) }

    /// The events that arrived since the last call, oldest first. Never blocks.
    public func takeEvents() -> [Event] {
        var events: [Event] = []
        var event = KpdEvent()
        while kpd_listener_take(listener, &event) != 0 {
            switch event.kind {
            case KPD_EVENT_ACTION_INVOKED:
                events.append(.actionInvoked(id: event.id, key: event.action.map { String(cString: $0) } ?? ""))
            default:
                events.append(.closed(id: event.id, reason: event.reason))
            }
            kpd_event_clear(&event)
        }
        return events
    }

    /// Waits until an event arrives or `timeout` has passed, and returns the events (none when
    /// the time ran out).
    public func waitForEvents(timeout: Duration) -> [Event] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let events = takeEvents()
            if !events.isEmpty { return events }
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return [] }
            // A failed wait (the descriptor gone) cannot bring an event: none came.
            guard
                (try? FileDescriptor(rawValue: eventDescriptor).waitUntilReadable(
                    milliseconds: DesktopDeadline.milliseconds(left, roundingUp: true))) != nil
            else { return [] }
        }
    }

    /// `text` with `&`, `<` and `>` as entities, for a server that reads the body as markup.
    public static func escapingMarkup(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") }) else {
            return text
        }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 16)
        for character in text.unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    /// `DBUS_SESSION_BUS_ADDRESS`, else `unix:path=$XDG_RUNTIME_DIR/bus` when that socket exists.
    package static func sessionBusAddress() -> String? {
        if let value = getenv("DBUS_SESSION_BUS_ADDRESS") {
            let address = String(cString: value)
            if !address.isEmpty { return address }
        }
        guard let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), !runtime.isEmpty else { return nil }
        let socketPath = runtime + "/bus"
        guard let status = try? FileStatus.of(socketPath), status.st_mode & S_IFMT == S_IFSOCK else { return nil }
        return "unix:path=" + socketPath
    }

    static func failure(_ error: UnsafeMutablePointer<GError>?, _ what: String, timeout: Duration) -> DesktopNotifierError {
        guard let error else { return .failed("could not \(what)") }
        defer { g_error_free(error) }
        let message = error.pointee.message.map { String(cString: $0) } ?? "no detail"
        switch kpd_error_kind(error) {
        case KPD_ERROR_CANCELLED:
            return .timedOut("the notification server did not answer within \(timeout.messageText) (while trying to \(what))")
        case KPD_ERROR_UNREACHABLE:
            return .unreachable("could not \(what): \(message)")
        default:
            return .failed("could not \(what): \(message)")
        }
    }
}

/// Why the notification server could not be used.
public enum DesktopNotifierError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No session bus, no notification server on it, or the connection broke.
    case unreachable(String)
    /// The bus or the server did not answer within the time budget.
    case timedOut(String)
    /// The server refused the call or answered something else.
    case failed(String)

    /// What went wrong, in one sentence.
    public var description: String {
        switch self {
        case .unreachable(let text), .timedOut(let text), .failed(let text): return text
        }
    }
}

/// One call's time budget: a GCancellable that a timer on the shim's own thread cancels when the
/// budget is spent (the approach of the Secret Service keyring).
package final class DesktopDeadline {
    private let deadline: OpaquePointer
    let cancellable: UnsafeMutablePointer<GCancellable>
    let end: ContinuousClock.Instant

    init(_ budget: Duration) {
        end = ContinuousClock.now.advanced(by: budget)
        deadline = kpg_deadline_new(guint(DesktopDeadline.milliseconds(budget, roundingUp: true)))
        cancellable = kpg_deadline_cancellable(deadline)
    }

    deinit {
        kpg_deadline_free(deadline)
    }

    /// What is left of the budget, for GDBus's own timeout argument (at least 1 ms).
    var milliseconds: Int32 {
        max(1, DesktopDeadline.milliseconds(ContinuousClock.now.duration(to: end), roundingUp: true))
    }

    /// `duration` in whole milliseconds, from 0 to `Int32.max`.
    package static func milliseconds(_ duration: Duration, roundingUp: Bool) -> Int32 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        var total = seconds.multipliedReportingOverflow(by: 1000)
        if total.overflow { return Int32.max }
        let fraction = attoseconds / 1_000_000_000_000_000
        total.partialValue += fraction
        if roundingUp, attoseconds % 1_000_000_000_000_000 != 0 { total.partialValue += 1 }
        return Int32(clamping: max(0, total.partialValue))
    }
}

/// Runs `body` with `text` as a C string, or NULL.
private func withOptionalCString<Result>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
