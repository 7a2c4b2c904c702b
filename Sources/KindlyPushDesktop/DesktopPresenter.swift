public import KindlyPush
internal import KindlyPushCore

/// Shows Kindly pushes on a Linux desktop: the library's `KindlyNotificationHandler` with two
/// parts plugged in, a ``DesktopNotifier`` (the freedesktop Notifications server) and a
/// ``Deduplicator`` (the SQLite store).
///
/// Every rule is the handler's: the display rule for its app state, screen, chat on screen and
/// delegate; the placeholder's text; the identities a push is claimed under (a message only once
/// it decrypted, a placeholder in a namespace of its own); the tap rule and the remembered tap.
/// The presenter adds what is the desktop's:
///
/// - A banner shows the cleaned title and body, with the category hint `im.received`, the
///   `desktop-entry` hint and `app_icon` when set, the default action "Open chat" (when the
///   server offers actions and ``Options/offersOpenAction`` is on), and one notification per
///   chat: a new message of a chat replaces its last banner (`replaces_id`, kept in the store).
/// - A placeholder shows the push's own alert (the backend's generic text), or
///   ``Options/placeholder``; the banner of the same envelope, when it later decrypts, replaces it.
/// - A push already shown is not shown again, when ``Options/deduplicates`` is on.
/// - A push that is not Kindly's is the host's: it is shown as its own alert only with
///   ``Options-swift.struct/showsPassthrough``.
///
/// A store that fails is reported once and replaced by an ``InMemoryDeduplicator``: a broken
/// store never loses or blocks a banner.
public final class DesktopPresenter: Sendable {
    /// How banners look and what is checked.
    public struct Options: Sendable {
        /// The notification's `app_name`.
        public var appName: String
        /// The `desktop-entry` hint; `nil` for none.
        public var desktopEntry: String?
        /// The `app_icon`: an icon name or a `file://` URI; empty for none.
        public var icon: String
        /// The `category` hint of banners and placeholders.
        public var category: String
        /// The label of the default action of a banner.
        public var openActionLabel: String
        /// Whether banners and placeholders carry the default action (when the server offers
        /// actions). Leave it off when nobody listens for taps.
        public var offersOpenAction: Bool
        /// Whether a push already shown is skipped.
        public var deduplicates: Bool
        /// Whether a push that is not Kindly's is shown as its own alert.
        public var showsPassthrough: Bool
        /// The placeholder text for a push that carries no alert text (and in pinned mode).
        public var placeholder: KindlyPushSealer.Placeholder
        /// Changes a decrypted banner before it is shown, as a service extension's `customize`
        /// does on iOS: called with the content the display rule decided (its title and body,
        /// the chat id in `threadIdentifier`, the push's document in `userInfo`), for banners
        /// only (not for placeholders nor pushes that are not Kindly's). What it leaves in
        /// `title` and `body` is shown, cleaned as every banner's text is; its first image
        /// attachment is the banner's image (the `image-path` hint). `nil`: banners as decided.
        public var customize: (@Sendable (inout NotificationContent) -> Void)?

        /// The options of `kindly-push notify` without its flags.
        public init(
            appName: String = "Kindly", desktopEntry: String? = nil, icon: String = "", category: String = "im.received",
            openActionLabel: String = "Open chat",
            offersOpenAction: Bool = true, deduplicates: Bool = true, showsPassthrough: Bool = false,
            placeholder: KindlyPushSealer.Placeholder = .default, customize: (@Sendable (inout NotificationContent) -> Void)? = nil
        ) {
            self.appName = appName
            self.desktopEntry = desktopEntry
            self.icon = icon
            self.category = category
            self.openActionLabel = openActionLabel
            self.offersOpenAction = offersOpenAction
            self.deduplicates = deduplicates
            self.showsPassthrough = showsPassthrough
            self.placeholder = placeholder
            self.customize = customize
        }
    }

    /// What became of one push.
    public enum Outcome: Sendable, Equatable {
        /// Posted as notification `id`: a `banner`, a `placeholder` or a `passthrough` alert.
        case shown(id: UInt32, presentation: DisplayRules.Presentation)
        /// Shown before (the store has it): not shown again.
        case duplicate
        /// The display rules show nothing (or a passed-through push has no alert).
        case nothing
        /// Not Kindly's, and passthrough is off: the host's to handle.
        case notKindly
    }

    /// The decision for one push, and what to post for it.
    public struct Plan: Sendable {
        /// The handler's decision and content.
        public let presentation: DevicePresentation
        /// The push as it arrived (a tap hands it back to the handler).
        public let userInfo: JSONValue
        /// Whether a push that is not Kindly's is the host's (passthrough is off).
        let isHosts: Bool
        /// What to post; `nil` when nothing is posted.
        public let notification: DesktopNotifier.Notification?
        /// The display decision, as `kindly-push route` prints it.
        public var decision: RouteDecision { presentation.decision }
        /// The outcome without posting anything, when nothing is to be posted (no notifier is
        /// needed then); `nil` when ``show(_:with:at:)`` posts.
        public var outcomeWithoutNotifier: Outcome? {
            guard notification == nil else { return nil }
            return isHosts ? .notKindly : .nothing
        }
    }

    /// What a tap on one of the presenter's notifications opens.
    public struct Tap: Sendable, Equatable {
        /// The push the notification showed.
        public let userInfo: JSONValue
        /// The chat a tap opens (a banner's usable chat id), `nil` for a placeholder.
        public let chatId: String?
    }

    /// How banners look and what is checked.
    public let options: Options
    /// The device side: rules, state, delegate, taps.
    public let handler: KindlyNotificationHandler
    private let store: Locked<any Deduplicator>
    private let storeFailed: @Sendable (DeduplicationError) -> Void
    private let hasFailed = Locked(false)
    /// The pushes of the notifications that can be tapped, by notification id.
    private let openTaps = Locked(OpenTaps())

    /// A presenter whose rules are `handler`'s, that remembers what it showed in `store` (an
    /// ``InMemoryDeduplicator`` when `nil`). `storeFailed` is called once, the first time the
    /// store fails; the presenter goes on with an in-memory store.
    public init(
        handler: KindlyNotificationHandler, store: (any Deduplicator)?, options: Options = Options(),
        storeFailed: @escaping @Sendable (DeduplicationError) -> Void = { _ in }
    ) {
        self.handler = handler
        self.store = Locked(store ?? InMemoryDeduplicator())
        self.options = options
        self.storeFailed = storeFailed
    }

    /// Decides what to show for `userInfo` (an APNs document) in the handler's state now.
    /// Decrypts at most once; posts nothing.
    public func plan(userInfo: JSONValue) -> Plan {
        let presentation = handler.devicePresentation(for: userInfo, placeholder: options.placeholder)
        let isHosts = presentation.decision.presentation == .passthrough && !options.showsPassthrough
        func notification(_ title: String, _ body: String, actions: Bool) -> DesktopNotifier.Notification {
            var notification = DesktopNotifier.Notification(
                appName: options.appName, summary: title, body: body, icon: options.icon, category: options.category,
                desktopEntry: options.desktopEntry)
            if actions, options.offersOpenAction { notification.actions = [.init(key: "default", label: options.openActionLabel)] }
            return notification
        }
        switch presentation.content {
        case .banner(let title, let body, let chatId):
            var banner = notification(title, body, actions: true)
            if let customize = options.customize {
                var content = NotificationContent(title: title, body: body, threadIdentifier: chatId, userInfo: userInfo.objectValue ?? [:])
                customize(&content)
                banner.summary = NotificationText.cleaned(content.title)
                banner.body = NotificationText.cleaned(content.body, keepsLines: true)
                banner.imagePath = content.attachments.first { $0.isImage }?.path
            }
            return Plan(presentation: presentation, userInfo: userInfo, isHosts: isHosts, notification: banner)
        case .placeholder(let title, let body):
            return Plan(
                presentation: presentation, userInfo: userInfo, isHosts: isHosts, notification: notification(title, body, actions: true))
        case .none:
            guard presentation.decision.presentation == .passthrough, options.showsPassthrough else {
                return Plan(presentation: presentation, userInfo: userInfo, isHosts: isHosts, notification: nil)
            }
            let alert = NotificationContent(userInfo: userInfo)
            guard presentation.decision.kind != .silent, !(alert.title.isEmpty && alert.body.isEmpty) else {
                return Plan(presentation: presentation, userInfo: userInfo, isHosts: isHosts, notification: nil)
            }
            var passthrough = notification(
                NotificationText.cleaned(alert.title), NotificationText.cleaned(alert.body, keepsLines: true), actions: false)
            passthrough.category = nil
            return Plan(presentation: presentation, userInfo: userInfo, isHosts: isHosts, notification: passthrough)
        }
    }

    /// Posts what `plan` decided, at `time` (Unix seconds): the claim, the look-up of what it
    /// replaces, `Notify` and the record are one step of the store; a duplicate is not posted,
    /// and a failed post keeps no claim, so that a later delivery is shown.
    public func show(_ plan: Plan, with notifier: DesktopNotifier, at time: Int64) throws(DesktopNotifierError) -> Outcome {
        guard let notification = plan.notification else { return plan.outcomeWithoutNotifier ?? .nothing }
        let presentation = plan.decision.presentation
        guard var claim = StoreClaim(plan.presentation, server: notifier.serverIdentity) else {
            // A passthrough alert, or a push without envelope fields: shown each time it comes.
            let id = try notifier.notify(notification)
            return .shown(id: id, presentation: presentation)
        }
        claim.checksDuplicates = options.deduplicates
        var failure: DesktopNotifierError?
        var posted: (id: UInt32, slot: StoreSlot)?
        let post = { (slot: StoreSlot) -> UInt32? in
            if let posted { return posted.id }  // a retry on the in-memory store after the file failed
            var copy = notification
            copy.replacesID = slot.replacesID
            copy.stackTag = slot.stackTag
            do throws(DesktopNotifierError) {
                let id = try notifier.notify(copy)
                posted = (id, slot)
                return id
            } catch {
                failure = error
                return nil
            }
        }
        let result =
            usingStore { store throws(DeduplicationError) in try store.present(claim, at: time, post: post) }
            ?? {
                // The store failed: its in-memory replacement decides (and does not post twice).
                let replacement = self.store.withLock { $0 }
                return (try? replacement.present(claim, at: time, post: post)) ?? (posted.map { .posted($0.id) } ?? .notPosted)
            }()
        switch result {
        case .duplicate:
            return .duplicate
        case .notPosted:
            throw failure ?? .failed("the notification was not posted")
        case .posted(let id):
            // A banner that replaced its envelope's placeholder leaves the chat's older banner:
            // closed, so that the chat keeps one.
            if let slot = posted?.slot, let older = slot.chatNotification, slot.placeholderNotification != nil, older != id {
                try? notifier.close(older)
            }
            if notifier.offersActions, !notification.actions.isEmpty {
                openTaps.withLock { $0.insert(Tap(userInfo: plan.userInfo, chatId: plan.presentation.chatToOpen), for: id) }
            }
            return .shown(id: id, presentation: presentation)
        }
    }

    /// ``plan(userInfo:)`` then ``show(_:with:at:)``.
    public func present(userInfo: JSONValue, with notifier: DesktopNotifier, at time: Int64) throws(DesktopNotifierError) -> Outcome {
        try show(plan(userInfo: userInfo), with: notifier, at: time)
    }

    /// The tap `event` is, when it is a click on one of this presenter's notifications (its
    /// default action), else `nil`. A closed notification is forgotten.
    public func tap(for event: DesktopNotifier.Event) -> Tap? {
        openTaps.withLock { taps in
            switch event {
            case .actionInvoked(let id, let key):
                return key == "default" ? taps.tap(for: id) : nil
            case .closed(let id, _):
                taps.remove(id)
                return nil
            }
        }
    }

    /// The handler's answer to `tap`: open the chat now, or open the app (and remember the tap).
    public func handle(_ tap: Tap) -> DeviceTap {
        handler.deviceTapped(tap.userInfo, chatId: tap.chatId)
    }

    /// Whether a notification this presenter posted with the open action may still be clicked.
    public var hasOpenBanners: Bool { openTaps.withLock { !$0.isEmpty } }

    /// Forgets the entries of the store recorded before `time`.
    public func purge(before time: Int64) {
        _ = usingStore { store throws(DeduplicationError) in try store.purge(before: time) }
    }

    /// Runs `body` on the store. When the store fails, reports it once and goes on with an
    /// in-memory store: the result is then `nil`.
    private func usingStore<Result>(_ body: (any Deduplicator) throws(DeduplicationError) -> Result) -> Result? {
        let current = store.withLock { $0 }
        do throws(DeduplicationError) {
            return try body(current)
        } catch {
            store.withLock { $0 = InMemoryDeduplicator() }
            let first = hasFailed.withLock { failed in
                defer { failed = true }
                return !failed
            }
            if first { storeFailed(error) }
            return nil
        }
    }
}

/// The taps of the notifications that can be clicked, by notification id; the oldest are
/// forgotten past a bound, so that an agent that runs for weeks keeps flat memory.
private struct OpenTaps: Sendable {
    static let limit = 4096
    private var taps: [UInt32: DesktopPresenter.Tap] = [:]
    private var order: [UInt32] = []

    var isEmpty: Bool { taps.isEmpty }

    func tap(for id: UInt32) -> DesktopPresenter.Tap? { taps[id] }

    mutating func insert(_ tap: DesktopPresenter.Tap, for id: UInt32) {
        if taps.updateValue(tap, forKey: id) == nil { order.append(id) }
        if order.count > OpenTaps.limit {
            let dropped = order.count - OpenTaps.limit / 2
            for old in order.prefix(dropped) { taps.removeValue(forKey: old) }
            order.removeFirst(dropped)
        }
    }

    mutating func remove(_ id: UInt32) {
        guard taps.removeValue(forKey: id) != nil else { return }
        order.removeAll { $0 == id }
    }
}
