internal import KindlyPushCore

/// The content of a notification as a reference, standing in for `UNMutableNotificationContent`
/// in code ported from iOS: `KindlyPushDecryption.apply(_:to:)`
/// and the `customize(_:payload:)` of ``KindlyNotificationService`` change
/// it in place, as they change the iOS object, and `userInfo` is a userInfo dictionary.
///
/// ```swift
/// let content = MutableNotificationContent(notification)
/// if KindlyPushDecryption.isKindlyNotification(content.userInfo),
///    let payload = KindlyPushDecryption.decrypt(userInfo: content.userInfo) {
///     KindlyPushDecryption.apply(payload, to: content)
/// }
/// contentHandler(content.content)
/// ```
///
/// It holds one ``NotificationContent`` (the value type the rest of the library takes), behind a
/// lock: each property is read and written whole, from any thread, and ``content`` is the value
/// at that moment. `userInfo` is converted each time it is read or written: a value JSON cannot
/// hold (a `Date`, say) is left out when it is written.
public final class MutableNotificationContent: Sendable {
    private let storage: Locked<NotificationContent>

    /// Content holding `content` (a copy of it: the value given does not change).
    public init(_ content: NotificationContent = NotificationContent()) {
        storage = Locked(content)
    }

    /// Content made from a userInfo dictionary as the system makes it from an APNs payload (see
    /// ``NotificationContent/init(userInfo:)-([AnyHashable:Any])``).
    public convenience init(userInfo: [AnyHashable: Any]) {
        self.init(NotificationContent(userInfo: userInfo))
    }

    /// The content as a value, now: what to hand a content handler or ``KindlyNotificationHandler``.
    public var content: NotificationContent {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }

    /// Changes the content in one step, with the lock held (do not call back into this object).
    public func update<Result>(_ change: (inout NotificationContent) -> Result) -> Result {
        storage.withLock { change(&$0) }
    }

    /// The banner title.
    public var title: String {
        get { content.title }
        set { update { $0.title = newValue } }
    }

    /// The banner subtitle (empty when none).
    public var subtitle: String {
        get { content.subtitle }
        set { update { $0.subtitle = newValue } }
    }

    /// The banner text.
    public var body: String {
        get { content.body }
        set { update { $0.body = newValue } }
    }

    /// The sound's name (`default`, a file name), or `nil` for none.
    public var sound: String? {
        get { content.sound }
        set { update { $0.sound = newValue } }
    }

    /// The app badge number to set, when the push sets one.
    public var badge: JSONNumber? {
        get { content.badge }
        set { update { $0.badge = newValue } }
    }

    /// `aps.thread-id`.
    public var threadIdentifier: String {
        get { content.threadIdentifier }
        set { update { $0.threadIdentifier = newValue } }
    }

    /// `aps.category`.
    public var categoryIdentifier: String {
        get { content.categoryIdentifier }
        set { update { $0.categoryIdentifier = newValue } }
    }

    /// Files shown with the notification, as iOS's `attachments`:
    /// `content.attachments.append(try NotificationAttachment(identifier: "photo", url: url))`.
    public var attachments: [NotificationAttachment] {
        get { content.attachments }
        set { update { $0.attachments = newValue } }
    }

    /// The whole push document as a userInfo dictionary, as on iOS. Written, it is converted as
    /// ``KindlyNotificationHandler/notificationReceived(_:)-([AnyHashable:Any])`` converts one
    /// (a member JSON cannot hold is left out).
    public var userInfo: [AnyHashable: Any] {
        get { content.userInfo.foundationDictionary }
        set {
            let document = JSONValue.userInfo(newValue).objectValue ?? JSONObject()
            update { $0.userInfo = document }
        }
    }
}

extension NotificationContent {
    /// ``init(userInfo:)-(JSONValue)`` for a userInfo dictionary, as iOS builds content from the
    /// APNs payload; the whole dictionary is kept in `userInfo` (converted as
    /// ``KindlyNotificationHandler/notificationReceived(_:)-([AnyHashable:Any])`` converts it).
    public init(userInfo: [AnyHashable: Any]) {
        self.init(userInfo: JSONValue.userInfo(userInfo))
    }
}

extension KindlyPushDecryption {
    /// Rewrites `content` in place for display, as the iOS SDK's `apply(_:to:)` rewrites a
    /// `UNMutableNotificationContent`: the `inout` form's change, made to its value, in
    /// one step.
    public static func apply(_ payload: DecryptedPayload, to content: MutableNotificationContent) {
        content.update { apply(payload, to: &$0) }
    }
}
