internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// A file shown with a notification, standing in for `UNNotificationAttachment`: an image, a sound
/// or a video that a notification service extension (``KindlyNotificationService``'s
/// `customize`) or a host adds to ``NotificationContent/attachments``. The `KindlyPush` module
/// adds the iOS form, `NotificationAttachment(identifier:url:options:)`.
///
/// As on iOS, the file must exist, be readable, and be of a type the system can show: PNG, JPEG
/// or GIF images; AIFF, WAVE, MP3 or MPEG-4 audio; MPEG, MPEG-2, MPEG-4 or AVI video (told by its
/// name's extension). On a desktop the first image is the banner's image (the `image-path` hint
/// of the notification specification), where the notification server shows images; sounds and
/// videos are kept in the content and not played.
public struct NotificationAttachment: Sendable, Equatable {
    /// Why a file cannot be an attachment.
    public enum Error: Swift.Error, Sendable, Equatable, CustomStringConvertible {
        /// The path is not absolute (a `file://` URL's path always is).
        case notAbsolute(String)
        /// The file cannot be opened to read, or is a folder: the path and the system's reason.
        case unreadable(String, reason: String)
        /// The name's extension is not one of the types an attachment can have.
        case unsupportedType(String)
        /// The URL is not a `file://` URL.
        case notAFileURL(String)

        public var description: String {
            switch self {
            case .notAbsolute(let path):
                "an attachment's path must be absolute: '\(Printable.escaped(path))'"
            case .unreadable(let path, let reason):
                "an attachment's file cannot be read: '\(Printable.escaped(path))': \(reason)"
            case .unsupportedType(let path):
                "an attachment must be a PNG, JPEG or GIF image, an AIFF, WAVE, MP3 or MPEG-4 sound, or an MPEG, MPEG-4 or AVI video (told by its extension): '\(Printable.escaped(path))'"
            case .notAFileURL(let url):
                "an attachment's URL must be a file:// URL: '\(Printable.escaped(url))'"
            }
        }
    }

    /// The identifier given, or the file's name when it was empty (iOS makes one up).
    public let identifier: String
    /// The file's absolute path.
    public let path: String
    /// The file's type as iOS names it, a uniform type identifier (`public.png`, `public.jpeg`,
    /// `com.compuserve.gif`, `public.mp3`, `public.mpeg-4`, ...).
    public let type: String

    /// An attachment of the file at `path` (absolute), checked now: it must open to read and
    /// have a supported type's extension.
    public init(identifier: String, path: String) throws(NotificationAttachment.Error) {
        guard path.hasPrefix("/") else { throw .notAbsolute(path) }
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let type = Self.types[Self.fileExtension(of: name)] else { throw .unsupportedType(path) }
        do {
            let descriptor = try FileDescriptor.openForReading(path)
            descriptor.close()
        } catch {
            throw .unreadable(path, reason: error.description)
        }
        self.identifier = identifier.isEmpty ? name : identifier
        self.path = path
        self.type = type
    }

    /// Whether the file is an image (shown in a desktop banner where the server shows images).
    public var isImage: Bool { Self.imageTypes.contains(type) }

    private static let imageTypes: Set<String> = ["public.png", "public.jpeg", "com.compuserve.gif"]
    /// The types `UNNotificationAttachment` accepts, by the extensions that name them.
    private static let types: [String: String] = [
        "png": "public.png", "jpg": "public.jpeg", "jpeg": "public.jpeg", "gif": "com.compuserve.gif",
        "aif": "public.aiff-audio", "aiff": "public.aiff-audio", "wav": "com.microsoft.waveform-audio",
        "mp3": "public.mp3", "m4a": "public.mpeg-4-audio", "mpg": "public.mpeg", "mpeg": "public.mpeg",
        "m2v": "public.mpeg-2-video", "mp4": "public.mpeg-4", "m4v": "public.mpeg-4", "avi": "public.avi",
    ]

    private static func fileExtension(of name: String) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return String(name[name.index(after: dot)...]).lowercased()
    }
}
