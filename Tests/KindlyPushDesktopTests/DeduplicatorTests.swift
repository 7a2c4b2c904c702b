import Dispatch
import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushDesktop
import Testing

/// A temporary folder, removed on deinit.
final class TemporaryFolder: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-desktop-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A sealed push for `key`, as a JSON value.
func sealedPush(
    for key: DeviceKey = .generate(), chat: String = "c-1", title: String = "Anna", body: String = "Hi", messageID: String? = nil
) throws -> JSONValue {
    let payload = try DecryptedPayload(chatId: chat, title: title, body: body, messageId: messageID)
    return try JSONValue(parsing: String(decoding: try KindlyPushSealer.seal(payload, for: key.publicKey), as: UTF8.self))
}

@Suite("De-duplication keys")
struct DeduplicationKeyTests {
    @Test("kid with message id, or with the envelope nonce without one; nil for a push that is not Kindly's")
    func keys() throws {
        let key = DeviceKey.generate()
        let first = try sealedPush(for: key, messageID: "m-1")
        let again = try sealedPush(for: key, messageID: "m-1")
        // Two envelopes of one message: the same key by message id, different ones by nonce.
        #expect(DeduplicationKey(userInfo: first, messageID: "m-1") == DeduplicationKey(userInfo: again, messageID: "m-1"))
        #expect(DeduplicationKey(userInfo: first, messageID: nil) != DeduplicationKey(userInfo: again, messageID: nil))
        #expect(DeduplicationKey(userInfo: first, messageID: nil) == DeduplicationKey(userInfo: first, messageID: nil))
        #expect(DeduplicationKey(userInfo: first, messageID: "m-1") != DeduplicationKey(userInfo: first, messageID: "m-2"))
        // The same message id under another device key is another push.
        #expect(
            DeduplicationKey(userInfo: try sealedPush(messageID: "m-1"), messageID: "m-1")
                != DeduplicationKey(userInfo: first, messageID: "m-1"))
        // A message id is never confused with a nonce that spells the same bytes.
        let nonce = try #require(first["kindly"]?["n"]?.stringValue)
        #expect(DeduplicationKey(userInfo: first, messageID: nonce) != DeduplicationKey(userInfo: first, messageID: nil))
        #expect(DeduplicationKey(userInfo: ["aps": ["alert": "x"]], messageID: "m-1") == nil)
        #expect(DeduplicationKey(userInfo: ["kindly": ["v": 1]], messageID: nil) == nil)
        #expect(ChatKey(chatID: "a") == ChatKey(chatID: "a"))
        #expect(ChatKey(chatID: "a") != ChatKey(chatID: "b"))
    }
}

/// The contract every ``Deduplicator`` keeps.
func checkContract(_ store: any Deduplicator) throws {
    let push = try sealedPush(messageID: "m-1")
    let key = try #require(DeduplicationKey(userInfo: push, messageID: "m-1"))
    let other = try #require(DeduplicationKey(userInfo: push, messageID: nil))
    #expect(try store.claim(key, at: 100))
    #expect(try !store.claim(key, at: 101))
    #expect(try store.claim(other, at: 200))
    try store.release(key)
    #expect(try store.claim(key, at: 300))

    let chat = ChatKey(chatID: "c-1")
    #expect(try store.notificationID(for: chat, server: "bus/:1.1") == nil)
    try store.setNotificationID(7, for: chat, server: "bus/:1.1", at: 100)
    #expect(try store.notificationID(for: chat, server: "bus/:1.1") == 7)
    // An id that another server gave means nothing to this one.
    #expect(try store.notificationID(for: chat, server: "bus/:1.9") == nil)
    try store.setNotificationID(UInt32.max, for: chat, server: "bus/:1.9", at: 300)
    #expect(try store.notificationID(for: chat, server: "bus/:1.9") == UInt32.max)
    #expect(try store.notificationID(for: chat, server: "bus/:1.1") == nil)
    try store.setNotificationID(3, for: ChatKey(chatID: "old"), server: "bus/:1.9", at: 50)

    // Entries recorded before the time are forgotten; later ones stay.
    try store.purge(before: 250)
    #expect(try store.claim(other, at: 400))
    #expect(try !store.claim(key, at: 400))
    #expect(try store.notificationID(for: chat, server: "bus/:1.9") == UInt32.max)
    #expect(try store.notificationID(for: ChatKey(chatID: "old"), server: "bus/:1.9") == nil)
}

@Suite("De-duplication stores")
struct DeduplicatorTests {
    @Test("the in-memory store keeps the contract")
    func inMemory() throws {
        try checkContract(InMemoryDeduplicator())
    }

    @Test("the SQLite store keeps the contract, and keeps it across openings")
    func sqlite() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state/state.sqlite3"
        try checkContract(try SQLiteDeduplicator(path: path))
        let key = try #require(DeduplicationKey(userInfo: try sealedPush(), messageID: "persisted"))
        #expect(try SQLiteDeduplicator(path: path).claim(key, at: 1000))
        let reopened = try SQLiteDeduplicator(path: path)
        #expect(try !reopened.claim(key, at: 1001))
        #expect(try reopened.notificationID(for: ChatKey(chatID: "c-1"), server: "bus/:1.9") == UInt32.max)
    }

    @Test("the file is 0600 in a 0700 folder, in WAL mode, and holds only digests")
    func fileAndFolder() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/made/state.sqlite3"
        let store = try SQLiteDeduplicator(path: path)
        let push = try sealedPush(chat: "chat-in-clear", messageID: "message-in-clear")
        _ = try store.claim(try #require(DeduplicationKey(userInfo: push, messageID: "message-in-clear")), at: 1)
        try store.setNotificationID(1, for: ChatKey(chatID: "chat-in-clear"), server: "bus/:1.1", at: 1)
        var status = stat()
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o600)
        #expect(stat(folder.path + "/made", &status) == 0 && status.st_mode & 0o777 == 0o700)
        var header = [UInt8](repeating: 0, count: 20)
        let descriptor = open(path, O_RDONLY)
        defer { close(descriptor) }
        #expect(read(descriptor, &header, 20) == 20)
        // Bytes 18 and 19 of the header are 2 in WAL mode.
        #expect(header[18] == 2 && header[19] == 2)
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path + "/made") {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/made/" + file))
            #expect(bytes.range(of: Data("in-clear".utf8)) == nil, "\(file)")
        }
    }

    @Test("a corrupt file, a loose file or a loose folder is refused with a clear message")
    func refused() throws {
        let folder = try TemporaryFolder()
        let corrupt = folder.path + "/corrupt.sqlite3"
        let garbage = Data(repeating: 0x5A, count: 8192)
        #expect(FileManager.default.createFile(atPath: corrupt, contents: garbage, attributes: [.posixPermissions: 0o600]))
        chmod(folder.path, 0o700)
        #expect(throws: DeduplicationError("\(corrupt): cannot set up the state store: file is not a database")) {
            try SQLiteDeduplicator(path: corrupt)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: corrupt)) == garbage)

        let loose = folder.path + "/loose.sqlite3"
        #expect(FileManager.default.createFile(atPath: loose, contents: nil, attributes: [.posixPermissions: 0o640]))
        #expect(throws: DeduplicationError("\(loose): permissions 640 are too open; the state file must be 0600 (chmod 600 \(loose))")) {
            try SQLiteDeduplicator(path: loose)
        }

        chmod(folder.path, 0o755)
        #expect(
            throws: DeduplicationError(
                "\(folder.path): permissions 755 are too open; the state folder must be 0700 (chmod 700 \(folder.path))")
        ) {
            try SQLiteDeduplicator(path: folder.path + "/state.sqlite3")
        }
    }

    @Test("eight connections claiming one key at once: exactly one gets it, on a new file")
    func concurrentClaims() throws {
        for round in 0..<5 {
            let folder = try TemporaryFolder()
            let path = folder.path + "/state-\(round)/state.sqlite3"
            let key = try #require(DeduplicationKey(userInfo: try sealedPush(), messageID: "m"))
            let winners = Locked(0)
            let failures = Locked<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                do {
                    if try SQLiteDeduplicator(path: path).claim(key, at: 1) { winners.withLock { $0 += 1 } }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 } == [])
            #expect(winners.withLock { $0 } == 1)
        }
    }
}
