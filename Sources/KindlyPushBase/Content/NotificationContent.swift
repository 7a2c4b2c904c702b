internal import KindlyPushCore

/// The content of a notification as a value, standing in for `UNNotificationContent` (and, with
/// ``KindlyPushDecryption/apply(_:to:)-(DecryptedPayload,_)`` changing it through `inout`, for
/// `UNMutableNotificationContent`). The `KindlyPush` module's `MutableNotificationContent` is the
/// same content held by reference, for code ported from iOS that changes it in place.
public struct NotificationContent: Sendable, Equatable {
    /// The banner title.
    public var title: String
    /// The banner subtitle (empty when none).
    public var subtitle: String
    /// The banner text.
    public var body: String
    /// The sound's name (`default`, a file name), or `nil` for none.
    public var sound: String?
    /// The app badge number to set, when the push sets one.
    public var badge: JSONNumber?
    /// `aps.thread-id`.
    public var threadIdentifier: String
    /// `aps.category`.
    public var categoryIdentifier: String
    /// The whole push document.
    public var userInfo: JSONObject
    /// Files shown with the notification (iOS's `attachments`): added by a service extension's
    /// `customize` or by the host; a push's document brings none. On a desktop the first image is
    /// the banner's image where the notification server shows images.
    public var attachments: [NotificationAttachment]

    /// Content with these fields, as `UNMutableNotificationContent` holds them.
    public init(
        title: String = "", subtitle: String = "", body: String = "", sound: String? = nil, badge: JSONNumber? = nil,
        threadIdentifier: String = "", categoryIdentifier: String = "", userInfo: JSONObject = [:],
        attachments: [NotificationAttachment] = []
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.sound = sound
        self.badge = badge
        self.threadIdentifier = threadIdentifier
        self.categoryIdentifier = categoryIdentifier
        self.userInfo = userInfo
        self.attachments = attachments
    }

    /// The content the system builds from an APNs payload: the alert (a string is the body),
    /// sound (a name, or a critical-alert object's `name`), badge, thread id and category.
    public init(userInfo: JSONValue) {
        let document = userInfo.objectValue ?? JSONObject()
        let aps = document[APNsKey.aps]?.objectValue ?? JSONObject()
        self.init(userInfo: document)
        switch aps[APNsKey.alert] {
        case .string(let text)?:
            body = text
        case .object(let alert)?:
            title = alert[APNsKey.title]?.stringValue ?? ""
            subtitle = alert[APNsKey.subtitle]?.stringValue ?? ""
            body = alert[APNsKey.body]?.stringValue ?? ""
        default:
            break
        }
        switch aps[APNsKey.sound] {
        case .string(let name)?: sound = name
        case .object(let critical)?: sound = critical["name"]?.stringValue
        default: sound = nil
        }
        badge = aps[APNsKey.badge]?.numberValue
        threadIdentifier = aps[APNsKey.threadID]?.stringValue ?? ""
        categoryIdentifier = aps[APNsKey.category]?.stringValue ?? ""
    }
}
