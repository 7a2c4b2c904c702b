public import FoundationEssentials

extension NotificationAttachment {
    /// iOS's `UNNotificationAttachment(identifier:url:options:)`: an attachment of the file at
    /// `url`, checked now (see ``NotificationAttachment``). `options` is accepted for code ported
    /// from iOS and not read (on iOS it picks a thumbnail and a type hint).
    ///
    /// ```swift
    /// content.attachments.append(try NotificationAttachment(identifier: "photo", url: imageURL))
    /// ```
    public init(identifier: String, url: URL, options: [AnyHashable: Any]? = nil) throws(NotificationAttachment.Error) {
        guard url.isFileURL else { throw .notAFileURL(url.absoluteString) }
        try self.init(identifier: identifier, path: url.standardizedFileURL.path)
    }

    /// The file's `file://` URL, as iOS's `url`.
    public var url: URL { URL(fileURLWithPath: path) }
}
