import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import Testing

/// A service in the iOS SDK's shape that attaches an image to every push it decrypts, as a
/// `UNNotificationServiceExtension` attaches a downloaded picture.
final class AttachingService: KindlyNotificationServiceExtension {
    let imageURL: URL
    var failures = 0

    init(imageURL: URL, decryption: KindlyPushDecryption) {
        self.imageURL = imageURL
        super.init(decryption: decryption, deadline: .seconds(5), logger: .disabled)
    }

    override func customize(_ content: MutableNotificationContent, payload: DecryptedPayload?) {
        guard payload != nil else { return }
        do {
            content.attachments.append(try NotificationAttachment(identifier: "photo", url: imageURL))
        } catch {
            failures += 1
        }
    }
}

@Suite("Notification attachments, as UNNotificationAttachment", .offThePool)
struct NotificationAttachmentTests {
    /// A folder with `photo.png`, `notes.txt` and a folder named `folder.png` (its path as a
    /// file URL spells it: no double slash).
    static func files() throws -> (folder: TemporaryFolder, path: String) {
        let folder = try TemporaryFolder("kindly-push-attachments")
        try Data([0x89, 0x50, 0x4E, 0x47]).write(to: URL(fileURLWithPath: folder.path + "/photo.png"))
        try Data("notes".utf8).write(to: URL(fileURLWithPath: folder.path + "/notes.txt"))
        try FileManager.default.createDirectory(atPath: folder.path + "/folder.png", withIntermediateDirectories: false)
        return (folder, URL(fileURLWithPath: folder.path).standardizedFileURL.path)
    }

    @Test("a readable file of a supported type is an attachment, with iOS's type identifier and its URL")
    func accepted() throws {
        let (kept, folder) = try Self.files()
        defer { withExtendedLifetime(kept) {} }
        let url = URL(fileURLWithPath: folder + "/photo.png")
        let attachment = try NotificationAttachment(identifier: "photo", url: url)
        #expect(attachment.identifier == "photo")
        #expect(attachment.path == folder + "/photo.png")
        #expect(attachment.type == "public.png")
        #expect(attachment.isImage)
        #expect(attachment.url.path == url.path)
        // An empty identifier: the file's name (iOS makes one up).
        #expect(try NotificationAttachment(identifier: "", path: folder + "/photo.png").identifier == "photo.png")
        // Types by extension, case-insensitive; a sound is kept, but it is not an image.
        try Data().write(to: URL(fileURLWithPath: folder + "/ring.MP3"))
        let sound = try NotificationAttachment(identifier: "ring", path: folder + "/ring.MP3")
        #expect(sound.type == "public.mp3")
        #expect(!sound.isImage)
    }

    @Test("what iOS refuses is refused, each with its reason")
    func refused() throws {
        let (kept, folder) = try Self.files()
        defer { withExtendedLifetime(kept) {} }
        #expect(throws: NotificationAttachment.Error.notAbsolute("photo.png")) {
            try NotificationAttachment(identifier: "a", path: "photo.png")
        }
        #expect(throws: NotificationAttachment.Error.notAFileURL("https://example.com/photo.png")) {
            try NotificationAttachment(identifier: "a", url: URL(string: "https://example.com/photo.png")!)
        }
        #expect(throws: NotificationAttachment.Error.unsupportedType(folder + "/notes.txt")) {
            try NotificationAttachment(identifier: "a", path: folder + "/notes.txt")
        }
        for missing in ["/missing.png", "/folder.png"] {
            do {
                _ = try NotificationAttachment(identifier: "a", path: folder + missing)
                Issue.record("\(missing) was taken")
            } catch {
                guard case .unreadable(let path, let reason) = error else {
                    Issue.record("\(missing): \(error)")
                    continue
                }
                #expect(path == folder + missing)
                #expect(!reason.isEmpty)
                #expect(error.description.contains("cannot be read"))
            }
        }
    }

    @Test("customize appends an attachment as on iOS, and the delivered content carries it")
    func serviceCarriesAttachments() async throws {
        let (kept, folder) = try Self.files()
        defer { withExtendedLifetime(kept) {} }
        let key = DeviceKey.generate()
        let service = AttachingService(
            imageURL: URL(fileURLWithPath: folder + "/photo.png"),
            decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])))
        let delivered = Recorder<NotificationContent>()
        service.didReceive(NotificationContent(userInfo: try TestPushes.sealed(.visible, for: key))) { delivered.record($0) }
        await delivered.wait()
        let content = try #require(delivered.all.first)
        #expect(content.title == "Anna")
        #expect(content.attachments.map(\.identifier) == ["photo"])
        #expect(content.attachments.first?.path == folder + "/photo.png")
        #expect(service.failures == 0)
        // The reference form sees what the value holds.
        #expect(MutableNotificationContent(content).attachments == content.attachments)
    }
}
