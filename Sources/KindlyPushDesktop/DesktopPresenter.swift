public import KindlyPush
internal import KindlyPushCore

/// Shows Kindly pushes on a Linux desktop, as the notification service extension and the app do
/// on iOS: the display rules decide (`KindlyPushRouter`, exactly as `kindly-push route`), and a
/// banner or a placeholder becomes a desktop notification through a ``DesktopNotifier``.
///
/// - A banner shows the decrypted title and body, with the category hint `im.received`, the
///   `desktop-entry` hint when one is set, the default action "Open chat" (when the server
///   offers actions and `Options/offersOpenAction` is on), and one notification per chat: a
///   new message of a chat replaces its last banner (`replaces_id`, kept in the store).
/// - A placeholder shows the push's own alert (the backend's generic text), or
///   `Options/placeholder` when the push has none: never ciphertext, never why decryption failed.
/// - A push already shown (same key id and message id, or same envelope) is not shown again,
///   when a store is given and `Options/deduplicates` is on.
/// - A push that is not Kindly's is the host's: it is shown as its own alert only with
///   `Options/showsPassthrough`.
///
/// ``plan(userInfo:)`` decides without any I/O but decryption; ``show(_:with:at:)`` posts.
/// A store that fails is reported once (``init(context:decryption:store:options:storeFailed:)``)
/// and replaced by an ``InMemoryDeduplicator``: a broken store never loses or blocks a banner.
public final class DesktopPresenter: Sendable {
    /// How banners look and what is checked.
    public struct Options: Sendable {
        /// The notification's `app_name`.
        public var appName: String
        /// The `desktop-entry` hint; `nil` for none.
        public var desktopEntry: String?
        /// The `category` hint of banners and placeholders.
        public var category: String
        /// The label of the default action of a banner.
        public var openActionLabel: String
        /// Whether banners carry the default action (when the server offers actions). Leave it off
        /// when nobody listens for ``DesktopNotifier/Event/actionInvoked(id:key:)``.
        public var offersOpenAction: Bool
        /// Whether a push already shown is skipped (needs a store).
        public var deduplicates: Bool
        /// Whether a push that is not Kindly's is shown as its own alert.
        public var showsPassthrough: Bool
        /// The placeholder text for a push that carries no alert text.
        public var placeholder: KindlyPushSealer.Placeholder

        /// The options of `kindly-push notify` without its flags.
        public init(
            appName: String = "Kindly", desktopEntry: String? = nil, category: String = "im.received",
            openActionLabel: String = "Open chat",
            offersOpenAction: Bool = true, deduplicates: Bool = true, showsPassthrough: Bool = false,
            placeholder: KindlyPushSealer.Placeholder = .default
        ) {
            self.appName = appName
            self.desktopEntry = desktopEntry
            self.category = category
            self.openActionLabel = openActionLabel
            self.offersOpenAction = offersOpenAction
            self.deduplicates = deduplicates
            self.showsPassthrough = showsPassthrough
            self.placeholder = placeholder
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
        /// The display decision, as `kindly-push route` prints it.
        public let decision: RouteDecision
        /// What to post; `nil` when nothing is posted.
        public let notification: DesktopNotifier.Notification?
        /// The outcome when nothing is posted.
        let outcomeWithoutPosting: Outcome
        /// The outcome without posting anything, when nothing is to be posted (no notifier is
        /// needed then); `nil` when ``show(_:with:at:)`` posts.
        public var outcomeWithoutNotifier: Outcome? { notification == nil ? outcomeWithoutPosting : nil }
        /// The chat a banner opens (and replaces the last banner of).
        let chatID: String?
        /// The push's de-duplication key, when it has one and is to be posted.
        let deduplicationKey: DeduplicationKey?
    }

    /// How banners look and what is checked.
    public let options: Options
    private let context: RouteContext
    private let decryption: KindlyPushDecryption
    private let store: Locked<any Deduplicator>
    private let storeFailed: @Sendable (DeduplicationError) -> Void
    private let hasFailed = Locked(false)
    /// The chats of the banners posted, by notification id, for taps.
    private let openChats = Locked(OpenChats())

    /// A presenter that routes in `context`, decrypts with `decryption`, and remembers what it
    /// showed in `store` (an ``InMemoryDeduplicator`` when `nil`). `storeFailed` is called once,
    /// the first time the store fails; the presenter goes on with an in-memory store.
    public init(
        context: RouteContext, decryption: KindlyPushDecryption, store: (any Deduplicator)?, options: Options = Options(),
        storeFailed: @escaping @Sendable (DeduplicationError) -> Void = { _ in }
    ) {
        self.context = context
        self.decryption = decryption
        self.store = Locked(store ?? InMemoryDeduplicator())
        self.options = options
        self.storeFailed = storeFailed
    }

    /// Decides what to show for `userInfo` (an APNs document). Decrypts at most once; posts nothing.
    public func plan(userInfo: JSONValue) -> Plan {
        var attempt: Result<DecryptedPayload, DecryptionFailure>?
        let decision = KindlyPushRouter.route(userInfo: userInfo, context: context) { push in
            let result = decryption.decryptResult(userInfo: push)
            attempt = result
            return result
        }
        switch decision.presentation {
        case .banner:
            guard let chatID = decision.chatId, let title = decision.title, let body = decision.body else {
                return Plan(decision: decision, notification: nil, outcomeWithoutPosting: .nothing, chatID: nil, deduplicationKey: nil)
            }
            // The message id comes from the payload decrypted here, or from the extension's mark.
            let messageID: String?
            if case .success(let payload)? = attempt {
                messageID = payload.messageId
            } else {
                messageID = KindlyPushRouter.markedMessage(userInfo: userInfo)?.messageId
            }
            var notification = DesktopNotifier.Notification(
                appName: options.appName, summary: title, body: body, category: options.category, desktopEntry: options.desktopEntry)
            if options.offersOpenAction {
                notification.actions = [.init(key: "default", label: options.openActionLabel)]
            }
            return Plan(
                decision: decision, notification: notification, outcomeWithoutPosting: .nothing, chatID: chatID,
                deduplicationKey: DeduplicationKey(userInfo: userInfo, messageID: messageID))
        case .placeholder:
            let text = placeholderText(userInfo: userInfo)
            let notification = DesktopNotifier.Notification(
                appName: options.appName, summary: text.title, body: text.body, category: options.category,
                desktopEntry: options.desktopEntry)
            return Plan(
                decision: decision, notification: notification, outcomeWithoutPosting: .nothing, chatID: nil,
                deduplicationKey: DeduplicationKey(userInfo: userInfo, messageID: nil))
        case .none:
            return Plan(decision: decision, notification: nil, outcomeWithoutPosting: .nothing, chatID: nil, deduplicationKey: nil)
        case .passthrough:
            guard options.showsPassthrough else {
                return Plan(decision: decision, notification: nil, outcomeWithoutPosting: .notKindly, chatID: nil, deduplicationKey: nil)
            }
            let alert = NotificationContent(userInfo: userInfo)
            guard decision.kind != .silent, !(alert.title.isEmpty && alert.body.isEmpty) else {
                return Plan(decision: decision, notification: nil, outcomeWithoutPosting: .nothing, chatID: nil, deduplicationKey: nil)
            }
            let notification = DesktopNotifier.Notification(
                appName: options.appName, summary: alert.title, body: alert.body, desktopEntry: options.desktopEntry)
            return Plan(decision: decision, notification: notification, outcomeWithoutPosting: .nothing, chatID: nil, deduplicationKey: nil)
        }
    }

    /// The text of a placeholder: the push's own alert as the backend sent it (its generic text),
    /// or `Options/placeholder` when it has none.
    ///
    /// Pinned mode (docs/spec/wire-format.md section 7.3) trusts nothing in a push that does not decrypt, its
    /// alert included: there this returns `Options/placeholder` whatever the push says.
    func placeholderText(userInfo: JSONValue) -> KindlyPushSealer.Placeholder {
        if decryption.isInPinnedMode { return options.placeholder }
        let alert = NotificationContent(userInfo: userInfo)
        if alert.title.isEmpty, alert.body.isEmpty { return options.placeholder }
        return KindlyPushSealer.Placeholder(title: alert.title, body: alert.body)
    }

    /// Posts what `plan` decided, at `time` (Unix seconds): claims the push in the store first
    /// (a duplicate is not posted), replaces the chat's last banner, and forgets the claim when
    /// the server could not be reached, so that a later delivery is shown.
    public func show(_ plan: Plan, with notifier: DesktopNotifier, at time: Int64) throws(DesktopNotifierError) -> Outcome {
        guard var notification = plan.notification else { return plan.outcomeWithoutPosting }
        if options.deduplicates, let key = plan.deduplicationKey {
            let claimed = usingStore { store throws(DeduplicationError) in try store.claim(key, at: time) } ?? true
            guard claimed else { return .duplicate }
        }
        let chat = plan.chatID.map(ChatKey.init(chatID:))
        // The id of the chat's last banner, when the server that answers now gave it.
        let server = notifier.serverIdentity
        if let chat {
            notification.replacesID =
                usingStore { store throws(DeduplicationError) in try store.notificationID(for: chat, server: server) }.flatMap { $0 } ?? 0
        }
        let id: UInt32
        do throws(DesktopNotifierError) {
            id = try notifier.notify(notification)
        } catch {
            if options.deduplicates, let key = plan.deduplicationKey {
                _ = usingStore { store throws(DeduplicationError) in try store.release(key) }
            }
            throw error
        }
        if let chat, let chatID = plan.chatID {
            _ = usingStore { store throws(DeduplicationError) in try store.setNotificationID(id, for: chat, server: server, at: time) }
            if notifier.offersActions, !notification.actions.isEmpty {
                openChats.withLock { $0.insert(chatID, for: id) }
            }
        }
        return .shown(id: id, presentation: plan.decision.presentation)
    }

    /// ``plan(userInfo:)`` then ``show(_:with:at:)``.
    public func present(userInfo: JSONValue, with notifier: DesktopNotifier, at time: Int64) throws(DesktopNotifierError) -> Outcome {
        try show(plan(userInfo: userInfo), with: notifier, at: time)
    }

    /// The chat to open for `event`: the chat of a banner this presenter posted whose default
    /// action was invoked (the user clicked it), else `nil`. A closed banner is forgotten.
    public func chatToOpen(for event: DesktopNotifier.Event) -> String? {
        openChats.withLock { chats in
            switch event {
            case .actionInvoked(let id, let key):
                return key == "default" ? chats.chat(for: id) : nil
            case .closed(let id, _):
                chats.remove(id)
                return nil
            }
        }
    }

    /// Whether a banner this presenter posted with the open action may still be clicked.
    public var hasOpenBanners: Bool { openChats.withLock { !$0.isEmpty } }

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

/// The chats of the banners that can be clicked, by notification id; the oldest are forgotten
/// past a bound, so that a stream that runs for weeks keeps flat memory.
private struct OpenChats: Sendable {
    static let limit = 4096
    private var chats: [UInt32: String] = [:]
    private var order: [UInt32] = []

    var isEmpty: Bool { chats.isEmpty }

    func chat(for id: UInt32) -> String? { chats[id] }

    mutating func insert(_ chat: String, for id: UInt32) {
        if chats.updateValue(chat, forKey: id) == nil { order.append(id) }
        if order.count > OpenChats.limit {
            let dropped = order.count - OpenChats.limit / 2
            for old in order.prefix(dropped) { chats.removeValue(forKey: old) }
            order.removeFirst(dropped)
        }
    }

    mutating func remove(_ id: UInt32) {
        guard chats.removeValue(forKey: id) != nil else { return }
        order.removeAll { $0 == id }
    }
}
