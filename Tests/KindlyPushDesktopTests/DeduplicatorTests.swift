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

/// The presentation a background handler with `keys` makes for `push`.
func presentation(_ push: JSONValue, keys: [DeviceKey]) -> DevicePresentation {
    let handler = KindlyNotificationHandler(
        decryption: KindlyPushDecryption(keyring: InMemoryKeyring(keys: keys)), hasExtension: true, openChat: { _ in })
    handler.setAppState(.background, chatOnScreen: nil)
    return handler.devicePresentation(for: push)
}

/// `push` with one byte of its ciphertext changed: a forgery that keeps kid and nonce.
func flippingCiphertext(_ push: JSONValue) throws -> JSONValue {
    var object = try #require(push.objectValue)
    var kindly = try #require(object["kindly"]?.objectValue)
    var text = Array(try #require(kindly["ct"]?.stringValue).utf8)
    text[4] = text[4] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
    kindly["ct"] = .string(String(decoding: text, as: UTF8.self))
    object["kindly"] = .object(kindly)
    return .object(object)
}

@Suite("De-duplication identities", .offThePool)
struct DeduplicationIdentityTests {
    @Test("a message is known by kid and message id, or by its envelope without one; a push that is not Kindly's by nothing")
    func identities() throws {
        let key = DeviceKey.generate()
        let first = try sealedPush(for: key, messageID: "m-1")
        let again = try sealedPush(for: key, messageID: "m-1")
        #expect(presentation(first, keys: [key]).messageIdentity == presentation(again, keys: [key]).messageIdentity)
        #expect(presentation(first, keys: [key]).envelopeIdentity != presentation(again, keys: [key]).envelopeIdentity)
        let other = try sealedPush(for: key, messageID: "m-2")
        #expect(presentation(first, keys: [key]).messageIdentity != presentation(other, keys: [key]).messageIdentity)
        let unnamed = try sealedPush(for: key)
        #expect(presentation(unnamed, keys: [key]).messageIdentity == presentation(unnamed, keys: [key]).envelopeIdentity)
        #expect(presentation(["aps": ["alert": "x"]], keys: [key]).envelopeIdentity == nil)
    }

    @Test("a push that does not decrypt claims nothing of the message, only its placeholder's envelope")
    func undecryptableClaimsNoMessage() throws {
        let key = DeviceKey.generate()
        let genuine = try sealedPush(for: key)
        let forged = presentation(try flippingCiphertext(genuine), keys: [key])
        #expect(forged.decision.presentation == .placeholder)
        #expect(forged.messageIdentity == nil)
        let claim = try #require(StoreClaim(forged, server: "bus/:1.1"))
        #expect(claim.namespace == .placeholder)
        let real = try #require(StoreClaim(presentation(genuine, keys: [key]), server: "bus/:1.1"))
        #expect(real.namespace == .message)
        #expect(real.envelope == claim.identity)
    }
}

/// Posts `claim` on `store`, the post answering `id`; the result and what the post was given,
/// without its stack tag (a store's own choice: `sqliteStackTags` checks the SQLite store's).
func post(_ store: any Deduplicator, _ claim: StoreClaim, id: UInt32?, at time: Int64 = 100) throws -> (ClaimResult, StoreSlot?) {
    let (result, seen) = try postKeepingTag(store, claim, id: id, at: time)
    return (
        result,
        seen.map { slot in StoreSlot(chatNotification: slot.chatNotification, placeholderNotification: slot.placeholderNotification) }
    )
}

/// As ``post(_:_:id:at:)``, with the slot as the store gave it.
func postKeepingTag(_ store: any Deduplicator, _ claim: StoreClaim, id: UInt32?, at time: Int64 = 100) throws -> (ClaimResult, StoreSlot?) {
    var seen: StoreSlot?
    let result = try store.present(claim, at: time) { slot in
        seen = slot
        return id
    }
    return (result, seen)
}

/// The contract every ``Deduplicator`` keeps.
func checkContract(_ store: any Deduplicator) throws {
    let key = DeviceKey.generate()
    let banner = try #require(StoreClaim(presentation(try sealedPush(for: key, messageID: "m-1"), keys: [key]), server: "bus/:1.1"))
    // A failed post keeps nothing; the next delivery posts.
    #expect(try post(store, banner, id: nil).0 == .notPosted)
    #expect(try post(store, banner, id: 7) == (.posted(7), StoreSlot()))
    #expect(try post(store, banner, id: 8).0 == .duplicate)

    // The chat's next banner replaces its last one, on the same server only.
    let next = try #require(StoreClaim(presentation(try sealedPush(for: key, messageID: "m-2"), keys: [key]), server: "bus/:1.1"))
    #expect(try post(store, next, id: 7) == (.posted(7), StoreSlot(chatNotification: 7)))
    var elsewhere = try #require(StoreClaim(presentation(try sealedPush(for: key, messageID: "m-3"), keys: [key]), server: "bus/:1.9"))
    #expect(try post(store, elsewhere, id: UInt32.max, at: 300) == (.posted(UInt32.max), StoreSlot()))
    elsewhere.checksDuplicates = false
    // --no-dedup: posted again, replacing the chat's banner.
    #expect(try post(store, elsewhere, id: UInt32.max, at: 300) == (.posted(UInt32.max), StoreSlot(chatNotification: UInt32.max)))

    // A placeholder, then the banner of the same envelope: the banner replaces the placeholder.
    let sealed = try sealedPush(for: key, chat: "c-2")
    let placeholder = try #require(StoreClaim(presentation(try flippingCiphertext(sealed), keys: [key]), server: "bus/:1.1"))
    #expect(try post(store, placeholder, id: 20) == (.posted(20), StoreSlot()))
    #expect(try post(store, placeholder, id: 21).0 == .duplicate)
    let decrypted = try #require(StoreClaim(presentation(sealed, keys: [key]), server: "bus/:1.1"))
    #expect(try post(store, decrypted, id: 20) == (.posted(20), StoreSlot(placeholderNotification: 20)))

    // Entries recorded before the time are forgotten; later ones stay.
    try store.purge(before: 250)
    #expect(try post(store, elsewhere, id: 5, at: 400).1 == StoreSlot(chatNotification: UInt32.max))
    #expect(try post(store, banner, id: 9, at: 400) == (.posted(9), StoreSlot()))
}

@Suite("De-duplication stores", .offThePool)
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
        let key = DeviceKey.generate()
        let claim = try #require(StoreClaim(presentation(try sealedPush(for: key, messageID: "persisted"), keys: [key]), server: "b"))
        #expect(try post(try SQLiteDeduplicator(path: path), claim, id: 3).0 == .posted(3))
        #expect(try post(try SQLiteDeduplicator(path: path), claim, id: 4).0 == .duplicate)
    }

    @Test("the SQLite store's stack tags: one per chat and one per placeholder's envelope, keyed, the same across openings")
    func sqliteStackTags() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state.sqlite3"
        let key = DeviceKey.generate()
        func tag(_ push: JSONValue, store: SQLiteDeduplicator) throws -> String? {
            let claim = try #require(StoreClaim(presentation(push, keys: [key]), server: "b"))
            return try postKeepingTag(store, claim, id: 1).1?.stackTag
        }
        let store = try SQLiteDeduplicator(path: path)
        let first = try #require(try tag(try sealedPush(for: key, chat: "c-1", messageID: "m-1"), store: store))
        #expect(try tag(try sealedPush(for: key, chat: "c-1", messageID: "m-2"), store: store) == first)
        #expect(try tag(try sealedPush(for: key, chat: "c-2", messageID: "m-3"), store: store) != first)
        let placeholder = try #require(try tag(try flippingCiphertext(try sealedPush(for: key, chat: "c-1")), store: store))
        #expect(placeholder != first)
        #expect(!first.contains("c-1"))
        #expect(try tag(try sealedPush(for: key, chat: "c-1", messageID: "m-4"), store: try SQLiteDeduplicator(path: path)) == first)
        let other = try SQLiteDeduplicator(path: folder.path + "/other/state.sqlite3")
        #expect(try tag(try sealedPush(for: key, chat: "c-1", messageID: "m-5"), store: other) != first, "another store, another key")
    }

    @Test("digests are keyed with a per-store secret, 0600 beside the file; two stores cannot be linked")
    func keyedDigests() throws {
        let folder = try TemporaryFolder()
        let key = DeviceKey.generate()
        let claim = try #require(
            StoreClaim(presentation(try sealedPush(for: key, chat: "c-1", messageID: "m-1"), keys: [key]), server: "b"))
        var keys: [Data] = []
        for name in ["one", "two"] {
            let path = folder.path + "/\(name)/state.sqlite3"
            #expect(try post(try SQLiteDeduplicator(path: path), claim, id: 1).0 == .posted(1))
            var status = stat()
            #expect(stat(path + ".key", &status) == 0 && status.st_mode & 0o777 == 0o600 && status.st_size == 32)
            keys.append(try Data(contentsOf: URL(fileURLWithPath: path)))
            // The unkeyed digest of the chat id (as the store computed it before) is not in the file.
            var input = Array("kindly-push/chat/v1".utf8)
            var length = UInt32(3).bigEndian
            withUnsafeBytes(of: &length) { input.append(contentsOf: $0) }
            input += Array("c-1".utf8)
            let unkeyed = input.withUnsafeBytes { BLAKE2b.hash($0, outputLength: 32) }
            let wal = (try? Data(contentsOf: URL(fileURLWithPath: path + "-wal"))) ?? Data()
            #expect(keys.last!.range(of: Data(unkeyed)) == nil && wal.range(of: Data(unkeyed)) == nil)
        }
        let secrets = try ["one", "two"].map { try Data(contentsOf: URL(fileURLWithPath: folder.path + "/\($0)/state.sqlite3.key")) }
        #expect(secrets[0] != secrets[1])
        // A loose secret is refused.
        chmod(folder.path + "/one/state.sqlite3.key", 0o644)
        #expect(throws: DeduplicationError.self) { try SQLiteDeduplicator(path: folder.path + "/one/state.sqlite3") }
    }

    @Test("no HOME and no XDG_STATE_HOME is an error, never a store under the current directory")
    func noHome() throws {
        #expect(throws: DeduplicationError.self) { try SQLiteDeduplicator.defaultPath(environment: [:]) }
        #expect(throws: DeduplicationError.self) { try SQLiteDeduplicator.defaultPath(environment: ["HOME": ""]) }
        #expect(throws: DeduplicationError.self) { try SQLiteDeduplicator.defaultPath(environment: ["HOME": "relative"]) }
        #expect(try SQLiteDeduplicator.defaultPath(environment: ["HOME": "/h"]) == "/h/.local/state/kindly-push/state.sqlite3")
        #expect(try SQLiteDeduplicator.defaultPath(environment: ["XDG_STATE_HOME": "/s"]) == "/s/kindly-push/state.sqlite3")
    }

    @Test("the file is 0600 in a 0700 folder, in WAL mode, and holds only digests")
    func fileAndFolder() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/made/state.sqlite3"
        let store = try SQLiteDeduplicator(path: path)
        let key = DeviceKey.generate()
        let push = try sealedPush(for: key, chat: "chat-in-clear", messageID: "message-in-clear")
        _ = try post(store, try #require(StoreClaim(presentation(push, keys: [key]), server: "bus/:1.1")), id: 1)
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
            let device = DeviceKey.generate()
            let claim = try #require(StoreClaim(presentation(try sealedPush(for: device, messageID: "m"), keys: [device]), server: "b"))
            let winners = Locked(0)
            let failures = Locked<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                do {
                    if case .posted = try post(try SQLiteDeduplicator(path: path), claim, id: 1).0 { winners.withLock { $0 += 1 } }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 } == [])
            #expect(winners.withLock { $0 } == 1)
        }
    }

    @Test("twenty connections posting banners of one chat at once: each replaces the last, one notification")
    func concurrentChat() throws {
        let folder = try TemporaryFolder()
        let path = folder.path + "/state/state.sqlite3"
        let device = DeviceKey.generate()
        let claims = try (0..<20).map { index in
            try #require(
                StoreClaim(presentation(try sealedPush(for: device, chat: "one", messageID: "m-\(index)"), keys: [device]), server: "b"))
        }
        // A server that gives a new id unless told to replace one.
        let nextID = Locked<UInt32>(0)
        let failures = Locked<[String]>([])
        _ = try SQLiteDeduplicator(path: path)
        DispatchQueue.concurrentPerform(iterations: 20) { index in
            do {
                let store = try SQLiteDeduplicator(path: path)
                _ = try store.present(claims[index], at: 1) { slot in
                    let id =
                        slot.replacesID != 0
                        ? slot.replacesID
                        : nextID.withLock {
                            $0 += 1
                            return $0
                        }
                    usleep(2_000)  // the server's answer takes a moment: another process's look-up falls in it
                    return id
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(nextID.withLock { $0 } == 1)
    }
}
