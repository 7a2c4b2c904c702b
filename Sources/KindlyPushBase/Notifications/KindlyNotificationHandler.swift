internal import KindlyPushCore

/// How the system should present a notification in the foreground, standing in for
/// `UNNotificationPresentationOptions` (what `willPresent`'s completion handler receives).
public struct PresentationOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int

    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// Show a banner.
    public static let banner = PresentationOptions(rawValue: 1 << 0)
    /// Play the notification's sound.
    public static let sound = PresentationOptions(rawValue: 1 << 1)
    /// Update the app badge.
    public static let badge = PresentationOptions(rawValue: 1 << 2)
    /// Keep it in the notification list.
    public static let list = PresentationOptions(rawValue: 1 << 3)

    /// A banner with its sound, as the system presents a push when the app is in the background.
    public static let bannerAndSound: PresentationOptions = [.banner, .sound]
}

/// What the app side did with a push that arrived in the foreground.
public struct ForegroundPresentation: Sendable, Equatable {
    /// The display decision (as `kindly-push route` prints it).
    public let decision: RouteDecision
    /// What to pass to `willPresent`'s completion handler: a banner with sound for a push that
    /// is not Kindly's (as before), for the placeholder, and for content the extension already
    /// decrypted; nothing otherwise.
    public let options: PresentationOptions
    /// The decrypted content the SDK posted as its own banner, when it posted one (the push was
    /// decrypted here, so the system's copy still holds the placeholder and is not presented).
    public let postedBanner: NotificationContent?
}

/// What became of a tap on a notification.
public enum TapOutcome: Sendable, Equatable {
    /// Not Kindly's: not consumed; hand it to the host's other provider.
    case notKindly
    /// The chat was opened.
    case opened(chatId: String)
    /// Remembered until `start()` has run and the app is active.
    case deferred
    /// `openChatOnNotificationTap` is off: consumed, nothing opened.
    case disabled
    /// Kindly's, but no chat id could be read (it is not marked decrypted and does not decrypt
    /// now, a placeholder): consumed, a log line written, and the app opened with no chat, as on
    /// iOS (the handler called its `openApp`).
    case noChat

    /// Whether the SDK took the tap (every Kindly push; never another provider's).
    public var isConsumed: Bool { self != .notKindly }
}

/// The app side of Kindly notifications, standing in for the iOS SDK's
/// `notificationWillPresent(_:completionHandler:)`, `notificationReceived(_:)` and tap handling.
///
/// The host tells it the app state and the screen, forwards its notification callbacks, and
/// supplies its actions: opening a chat, posting a banner of the SDK's own (`postBanner`), and
/// bringing the app up with no chat for a tap on a placeholder (`openApp`); with no `postBanner`
/// or `openApp`, what they would have done is logged once instead (see the initializer). Decisions follow
/// docs/spec/display-rules.md through ``KindlyPushRouter``: content the extension marked decrypted is not
/// decrypted again (its chat id comes from `kindly.chat_id`); the delegate is asked once for
/// each push the app process has decrypted, before the rule; pushes that are not Kindly's are
/// never consumed.
///
/// ## Taps
///
/// A tap opens the push's chat when ``openChatOnNotificationTap`` is on (the default) and the
/// app is started and active. A tap that arrives before ``start()`` (the tap launched the app)
/// is remembered (the latest one) and replayed once `start()` has run and the app is active,
/// provided `start()` runs within ``tapReplayWindow`` (60 s) of the tap, inclusive: a tap
/// exactly 60 s old is still replayed, one older is dropped with a log line. The age is taken
/// when `start()` runs, as docs/spec/display-rules.md words it; a tap that passed it waits for the app to
/// become active. A tap after `start()` while the app is not active waits for activation the
/// same way. Times come from the injected ``KindlyClock``.
///
/// All methods are safe to call from any thread. Callbacks (the delegate, `openChat`,
/// `postBanner`, `openApp`, ``sendRegistration``) are called without the handler's lock held, so they may
/// call back into the handler; the delegate is asked on the main actor (see "Where the delegate is
/// asked" in ``KindlyNotificationDelegate``), and one set with ``setDelegate(_:)`` under a gate of
/// its own (one call at a time), which the same thread may take again.
public final class KindlyNotificationHandler: Sendable {
    /// How long a tap made before `start()` stays worth replaying.
    public static let tapReplayWindow: Duration = .seconds(60)

    private struct PendingTap {
        var userInfo: JSONValue
        var tappedAt: ContinuousClock.Instant
        /// True once `start()` has run within the window (or the tap came after `start()`).
        var admitted: Bool
        /// False for a tap the host presents itself (``deviceTapped(_:chatId:)``): that host
        /// opens the app on its own, so the handler does not call `openApp` for it.
        var opensApp: Bool
    }

    private struct State {
        var delegate: (any KindlyNotificationDelegate & Sendable)?
        var sendRegistration: (@Sendable (Registration) -> Void)?
        var openChatOnNotificationTap = true
        var notificationMode: KindlyNotificationMode = .automatic
        var appState: DisplayRules.AppState = .background
        var screen: DisplayRules.Screen = .other
        var chatOnScreen: String?
        var isStarted = false
        var pendingTap: PendingTap?
        /// Whether the missing `postBanner`, or the missing `openApp`, was logged already.
        var loggedNoPostBanner = false
        /// Whether the delegate's answering with the default was logged already.
        var loggedDefaultAnswer = false
        var loggedNoOpenApp = false
    }

    /// How pushes are decrypted (the keyring the app shares with its extension).
    public let decryption: KindlyPushDecryption
    /// Whether the host ships a notification service extension built on the library, or on
    /// Linux another decrypting presenter (`kindly-push notify`): the declaration that
    /// ``KindlyNotificationMode/automatic`` resolves from.
    public let hasExtension: Bool
    private let clock: any KindlyClock
    /// Where the handler logs (``KindlyLogger/default`` unless the host gave one).
    package let logger: KindlyLogger
    private let openChat: @Sendable (String) -> Void
    private let postBanner: (@Sendable (NotificationContent) -> Void)?
    private let openApp: (@Sendable () -> Void)?
    private let state = Locked(State())

    /// A handler for the app process.
    ///
    /// - Parameters:
    ///   - decryption: how pushes are decrypted (the keyring the app shares with its extension).
    ///   - hasExtension: whether the host has a decrypting presenter (an extension built on the
    ///     library, or `kindly-push notify`); ``KindlyNotificationMode/automatic`` resolves from it.
    ///   - clock: the clock that times taps (inject ``KindlyClock`` doubles in tests).
    ///   - logger: where the handler logs; by default ``KindlyLogger/default`` as it is when the
    ///     handler is made (warnings and errors to the system log, unless the host set another).
    ///   - openChat: opens the chat with this id (called on the caller's thread).
    ///   - postBanner: posts a local notification with this decrypted content (the SDK's own
    ///     banner), the presenter of the silent path and of a foreground push the app decrypts
    ///     itself. The library has no presenter of its own on Linux (the iOS SDK posts through the
    ///     system): with none given (`nil`, the default), a banner the display rule decides is not
    ///     shown, and the handler says so once, at `warning`, the first time it happens.
    ///   - openApp: brings the app up with no chat open, for a tap on a Kindly notification whose
    ///     chat cannot be read (a placeholder that does not decrypt): on iOS the system opens the
    ///     app for a tap on any Kindly notification. With none given (`nil`, the default), such a
    ///     tap opens nothing, and the handler says so once, at `warning`.
    public init(
        decryption: KindlyPushDecryption, hasExtension: Bool, clock: any KindlyClock = SystemKindlyClock(),
        logger: KindlyLogger = .default, openChat: @escaping @Sendable (String) -> Void,
        postBanner: (@Sendable (NotificationContent) -> Void)? = nil, openApp: (@Sendable () -> Void)? = nil
    ) {
        self.decryption = decryption
        self.hasExtension = hasExtension
        self.clock = clock
        self.logger = logger
        self.openChat = openChat
        self.postBanner = postBanner
        self.openApp = openApp
    }

    /// How long a push delivered off the main thread waits for a delegate's answer on the main
    /// actor before it is allowed with an error logged (see "Where the delegate is asked" in
    /// ``KindlyNotificationDelegate``).
    public static var mainActorWait: Duration { DelegateQuestion.mainActorWait }

    /// The host's `shouldHandleNotification`, for a `Sendable` delegate: a class on the main actor
    /// (a view controller: `handler.delegate = self`, as on iOS), or a
    /// ``ClosureNotificationDelegate``; `nil` allows every push. A delegate of any other type, such
    /// as a non-final class, is set with ``setDelegate(_:)``, after which this is the handler's
    /// owner of it. The handler asks a delegate on the main actor, from whatever thread delivered
    /// the push (see "Where the delegate is asked" in ``KindlyNotificationDelegate``).
    public var delegate: (any KindlyNotificationDelegate & Sendable)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// Sets the host's delegate, of any type, as the iOS SDK's delegate is set: a non-final class
    /// whose superclass is not `Sendable` too.
    ///
    /// The handler takes the delegate over (`sending`): the compiler refuses a call that would
    /// leave the caller a reference it could use from another thread (`setDelegate(self)` from a
    /// non-`Sendable` class, say), and the handler asks the delegate one call at a time, on the
    /// main actor. `nil` removes it (every push is allowed).
    ///
    /// ```swift
    /// handler.setDelegate(ChatViewController())
    /// ```
    public func setDelegate(_ delegate: sending (any KindlyNotificationDelegate)?) {
        var owned: (any KindlyNotificationDelegate & Sendable)?
        if let delegate { owned = OwnedNotificationDelegate(delegate) }
        state.withLock { $0.delegate = owned }
    }

    /// Where ``setAPNSDeviceToken(_:)-(Data)`` sends each registration (wire format section 6),
    /// set once when the app starts: the iOS SDK sends it to the backend itself, and on Linux the
    /// host's own transport does. Called on the caller's thread, without any lock held. Until it is
    /// set, a registration is not sent and an error is logged.
    public var sendRegistration: (@Sendable (Registration) -> Void)? {
        get { state.withLock { $0.sendRegistration } }
        set { state.withLock { $0.sendRegistration = newValue } }
    }

    /// Whether tapping a Kindly notification opens its chat. On by default.
    public var openChatOnNotificationTap: Bool {
        get { state.withLock { $0.openChatOnNotificationTap } }
        set { state.withLock { $0.openChatOnNotificationTap = newValue } }
    }

    /// How the host wants pushes delivered; read when registering (``setAPNSDeviceToken(_:)-(Data)``).
    /// `automatic` by default.
    public var notificationMode: KindlyNotificationMode {
        get { state.withLock { $0.notificationMode } }
        set { state.withLock { $0.notificationMode = newValue } }
    }

    /// What is on screen (read in the foreground).
    public var screen: DisplayRules.Screen {
        get { state.withLock { $0.screen } }
        set { state.withLock { $0.screen = newValue } }
    }

    /// The chat on top when ``screen`` is `chat` and the host says which one (display-rules.md's
    /// screen input with a chat id): a decrypted push for another chat is handled as `other`.
    /// `nil` (the default): `chat` holds for every push.
    public var chatOnScreen: String? {
        get { state.withLock { $0.chatOnScreen } }
        set { state.withLock { $0.chatOnScreen = newValue } }
    }

    /// Records the app state and what is on screen at once (`chatId`: the chat on top, or `nil`
    /// for another screen), as a host that reports both in one call (the desktop agent's
    /// `SetAppState`) needs: no push is decided with one of them old and the other new.
    public func setAppState(_ appState: DisplayRules.AppState, chatOnScreen chatId: String?) {
        state.withLock { state in
            state.appState = appState
            state.screen = chatId == nil ? .other : .chat
            state.chatOnScreen = chatId
        }
        replayIfReady()
    }

    /// The app state; `background` until the host says otherwise. Set it with ``setAppState(_:)``.
    public var appState: DisplayRules.AppState { state.withLock { $0.appState } }

    /// Whether ``start()`` has run.
    public var isStarted: Bool { state.withLock { $0.isStarted } }

    /// Records the app state; becoming `foreground` after `start()` replays a remembered tap.
    public func setAppState(_ appState: DisplayRules.AppState) {
        state.withLock { $0.appState = appState }
        replayIfReady()
    }

    /// The SDK is ready: a tap remembered from before is replayed now if the app is active (or
    /// as soon as it becomes active), provided it is at most ``tapReplayWindow`` old; an older
    /// one is dropped with a log line.
    public func start() {
        // The clock is injected code: read it outside the lock, as every callback is run.
        let now = clock.now
        let dropped: Duration? = state.withLock { state in
            state.isStarted = true
            guard var tap = state.pendingTap, !tap.admitted else { return nil }
            let age = now - tap.tappedAt
            guard age <= KindlyNotificationHandler.tapReplayWindow else {
                state.pendingTap = nil
                return age
            }
            tap.admitted = true
            state.pendingTap = tap
            return nil
        }
        if let dropped {
            logger.log(
                .warning,
                "dropped a notification tap made \(dropped) before start(): older than \(KindlyNotificationHandler.tapReplayWindow)")
        }
        replayIfReady()
    }

    // MARK: Presenting

    /// The `willPresent` decision for a push that arrives while the app is in the foreground:
    /// passthrough for a push that is not Kindly's, the display rule for Kindly's. When the rule
    /// gives the SDK a banner of content the app decrypted itself, the banner is posted through
    /// `postBanner`; content the extension already decrypted is presented by the system as is.
    public func notificationWillPresent(_ content: NotificationContent) -> ForegroundPresentation {
        let userInfo = JSONValue.object(content.userInfo)
        let (decision, resolution) = KindlyPushRouter.evaluate(
            userInfo: userInfo, context: context(appState: .foreground), decryption: decryption)
        switch decision.presentation {
        case .passthrough, .placeholder:
            return ForegroundPresentation(decision: decision, options: .bannerAndSound, postedBanner: nil)
        case .none:
            return ForegroundPresentation(decision: decision, options: [], postedBanner: nil)
        case .banner:
            if case .decrypted(let payload)? = resolution {
                var banner = content
                KindlyPushDecryption.apply(payload, to: &banner)
                post(banner)
                return ForegroundPresentation(decision: decision, options: [], postedBanner: banner)
            }
            return ForegroundPresentation(decision: decision, options: .bannerAndSound, postedBanner: nil)
        }
    }

    /// ``notificationWillPresent(_:)`` in the shape of `userNotificationCenter(_:willPresent:
    /// withCompletionHandler:)`: `completionHandler` is called exactly once, with the options,
    /// before this returns and on the caller's thread. So it need not be `Sendable`: a host's
    /// `willPresent` (on the main actor, say) passes its own completion handler straight through.
    public func notificationWillPresent(
        _ content: NotificationContent, completionHandler: (PresentationOptions) -> Void
    ) {
        completionHandler(notificationWillPresent(content).options)
    }

    /// The silent path (`didReceiveRemoteNotification`): a silent Kindly push delivered to the
    /// app process in the current app state. It is decrypted (unless marked decrypted), the
    /// delegate is asked, and a banner is posted through `postBanner` when the rule says so.
    ///
    /// - Returns: the decision; `passthrough` for a push that is not Kindly's (not consumed);
    ///   `nil` for a Kindly push with an alert, which the extension, the system or
    ///   ``notificationWillPresent(_:)`` decides (deciding it here too could show it twice and
    ///   would ask the delegate twice).
    @discardableResult
    public func notificationReceived(_ userInfo: JSONValue) -> RouteDecision? {
        let kind = PushKind(userInfo: userInfo)
        guard KindlyPushDecryption.isKindlyNotification(userInfo) else { return .notKindly(kind: kind) }
        guard kind == .silent else { return nil }
        let (decision, resolution) = KindlyPushRouter.evaluate(
            userInfo: userInfo, context: context(appState: appState), decryption: decryption)
        if decision.presentation == .banner {
            var banner = NotificationContent(userInfo: userInfo)
            if case .decrypted(let payload)? = resolution { KindlyPushDecryption.apply(payload, to: &banner) }
            post(banner)
        }
        return decision
    }

    /// Logs, once, that the delegate answered with the default `shouldHandleNotification`.
    private func logDefaultAnswer() {
        logOnce(
            \.loggedDefaultAnswer, .info,
            "the delegate does not implement shouldHandleNotification(notification:): the default allowed the push"
                + " (a method with other labels is not the requirement; logged once)")
    }

    /// Logs `message` the first time only: `flag` records that it was.
    private func logOnce(_ flag: WritableKeyPath<State, Bool>, _ level: KindlyLogLevel, _ message: @autoclosure () -> String) {
        let first = state.withLock { state in
            defer { state[keyPath: flag] = true }
            return !state[keyPath: flag]
        }
        if first { logger.log(level, message()) }
    }

    /// Hands `banner` to `postBanner`, or, with none, logs once that banners are not shown.
    private func post(_ banner: NotificationContent) {
        if let postBanner {
            postBanner(banner)
            return
        }
        logOnce(
            \.loggedNoPostBanner, .warning,
            "the display rule decided a banner for a Kindly push, but no postBanner is set: it was not shown"
                + " (give KindlyNotificationHandler a postBanner to present banners; logged once)")
    }

    /// ``notificationReceived(_:)-(JSONValue)`` for a notification, as the iOS SDK's
    /// `notificationReceived(_ notification: UNNotification)` takes one: its `userInfo` is the push.
    @discardableResult
    public func notificationReceived(_ notification: NotificationContent) -> RouteDecision? {
        notificationReceived(JSONValue.object(notification.userInfo))
    }

    func context(appState: DisplayRules.AppState) -> RouteContext {
        let (screen, chatOnScreen, delegate) = state.withLock { ($0.screen, $0.chatOnScreen, $0.delegate) }
        var context = RouteContext(appState: appState, screen: screen, hasExtension: hasExtension)
        if let delegate {
            context.delegate = .object(DefaultWatchingDelegate(delegate: delegate, logger: logger) { [self] in logDefaultAnswer() })
        }
        context.chatOnScreen = chatOnScreen
        return context
    }

    // MARK: Taps

    /// A tap on a notification (`didReceive response`). A push that is not Kindly's is never
    /// consumed; a Kindly push always is, and opens its chat now, later (see the type's
    /// documentation on taps), or not at all when ``openChatOnNotificationTap`` is off.
    @discardableResult
    public func notificationTapped(_ userInfo: JSONValue) -> TapOutcome {
        tapped(userInfo, opensApp: true)
    }

    /// ``notificationTapped(_:)-(JSONValue)``; `opensApp` false when the host opens the app itself.
    func tapped(_ userInfo: JSONValue, opensApp: Bool) -> TapOutcome {
        guard KindlyPushDecryption.isKindlyNotification(userInfo) else { return .notKindly }
        let now = clock.now
        let openNow: Bool? = state.withLock { state in
            guard state.openChatOnNotificationTap else { return nil }
            if state.isStarted, state.appState == .foreground { return true }
            // Only the latest tap is worth replaying: it is the chat the user asked for last.
            state.pendingTap = PendingTap(userInfo: userInfo, tappedAt: now, admitted: state.isStarted, opensApp: opensApp)
            return false
        }
        switch openNow {
        case nil: return .disabled
        case false?: return .deferred
        case true?: return open(userInfo, opensApp: opensApp)
        }
    }

    /// Replays the remembered tap once `start()` has run and the app is active.
    private func replayIfReady() {
        let tap: PendingTap? = state.withLock { state in
            guard state.isStarted, state.appState == .foreground, let tap = state.pendingTap, tap.admitted else { return nil }
            state.pendingTap = nil
            return state.openChatOnNotificationTap ? tap : nil
        }
        if let tap { open(tap.userInfo, opensApp: tap.opensApp) }
    }

    /// Opens the chat of a tapped Kindly push: `kindly.chat_id` when the push is marked
    /// decrypted, otherwise the chat id of the payload decrypted now.
    @discardableResult
    private func open(_ userInfo: JSONValue, opensApp: Bool) -> TapOutcome {
        let chatId: String?
        switch KindlyPushRouter.resolve(userInfo: userInfo, decryption: decryption) {
        case .alreadyDecrypted(let message): chatId = message.chatId
        case .decrypted(let payload): chatId = payload.chatId
        case .markedWithoutChat:
            logger.log(.warning, "a tapped Kindly notification is marked decrypted but has no kindly.chat_id: no chat opened")
            chatId = nil
        case .failed(let failure):
            logger.log(.warning, "a tapped Kindly notification does not decrypt (\(failure.reason.code)): no chat opened")
            chatId = nil
        }
        guard let chatId else {
            if opensApp { bringUpApp() }
            return .noChat
        }
        openChat(chatId)
        return .opened(chatId: chatId)
    }

    /// Calls `openApp`, or, with none, logs once that a tap with no chat opens nothing.
    private func bringUpApp() {
        if let openApp {
            openApp()
            return
        }
        logOnce(
            \.loggedNoOpenApp, .warning,
            "a tapped Kindly notification has no chat to open, and no openApp is set: the app was not brought up"
                + " (give KindlyNotificationHandler an openApp; logged once)")
    }
}
