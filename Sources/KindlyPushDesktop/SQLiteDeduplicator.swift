internal import CSQLite
internal import KindlyPush
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The ``Deduplicator`` of `kindly-push notify`: one SQLite file, shared safely by any number of
/// processes.
///
/// - The file is created 0600 in a 0700 folder (made when missing); a file or folder that group
///   or others can read is refused, as key files are.
/// - WAL mode and a busy timeout: concurrent processes wait for each other instead of failing.
/// - ``present(_:at:post:)`` holds an exclusive lock (`PATH.lock`) over the claim and the look-up
///   of the notifications to replace (one `BEGIN IMMEDIATE` transaction), the post and the record
///   of its id. Of twenty processes showing
///   banners of one chat at once, each waits for the one before, so each replaces the last
///   banner instead of adding one; of eight claiming one push, one posts.
/// - Keys are keyed BLAKE2b digests, with a random 32-byte secret kept 0600 beside the file
///   (`PATH.key`): no message id or chat id is stored in clear, a guessable id cannot be
///   recovered from the file alone, and two stores cannot be linked.
///
/// ## A kill while the server has the request
///
/// The claim is committed before `Notify` is sent, marked pending, and the notification id
/// recorded (and the mark removed) after the server answered; an exclusive lock on `PATH.lock`
/// keeps other processes out from the claim to the record. So a pending mark found under the lock
/// is one whose process was killed between its claim and its record: that push is presented
/// again, and nothing is lost wherever the kill lands. If the server had drawn the first request,
/// the second carries the same stack tag (`x-dunst-stack-tag`, from ``StoreSlot/stackTag``) and
/// takes its place on a server that reads the tag (dunst); on one that does not, a kill in
/// that window (from the server's receipt to the record, a round trip and a commit) shows the
/// push twice. The earlier order (no pending mark) lost the push instead when the kill fell
/// between the commit and the request's write to the bus (about one run in nine of the agent's
/// kill test).
public final class SQLiteDeduplicator: Deduplicator {
    /// The file.
    public let path: String

    private let database: Locked<Database>
    private let secret: SecureBytes
    /// `PATH.lock`, held from a claim's look-up to the record of its notification.
    private let lock: Int32

    /// For tests: the process SIGKILLs itself on claim number `claim` (from 1), right after the
    /// claim is committed (`afterClaim`) or right after the server answered the post
    /// (`afterPost`), the two windows of a kill while the server has the request.
    package struct KillPoint: Sendable {
        package var afterPost: Bool
        package var claim: Int

        /// `after-claim:N` or `after-post:N`.
        package init?(_ text: String) {
            let parts = text.split(separator: ":")
            guard parts.count == 2, let claim = Int(parts[1]), claim > 0, ["after-claim", "after-post"].contains(parts[0]) else {
                return nil
            }
            self.afterPost = parts[0] == "after-post"
            self.claim = claim
        }
    }

    private let kill = Locked<(point: KillPoint?, claims: Int)>((nil, 0))

    /// See ``KillPoint``; `nil` (the default) for none.
    package var killPoint: KillPoint? {
        get { kill.withLock { $0.point } }
        set { kill.withLock { $0.point = newValue } }
    }

    private func killIfAsked(afterPost: Bool) {
        let now = kill.withLock { state -> Bool in
            guard let point = state.point else { return false }
            if !afterPost { state.claims += 1 }
            return point.afterPost == afterPost && state.claims == point.claim
        }
        if now { raise(SIGKILL) }
    }

    /// How long a statement waits for another process's write before it fails.
    public static let defaultBusyTimeout: Duration = .seconds(5)

    /// `$XDG_STATE_HOME/kindly-push/state.sqlite3`, by default
    /// `~/.local/state/kindly-push/state.sqlite3`.
    ///
    /// Throws when neither an absolute `XDG_STATE_HOME` nor an absolute `HOME` is set: a store
    /// is never made under the current directory.
    public static func defaultPath(environment: [String: String]) throws(DeduplicationError) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/kindly-push/state.sqlite3" }
        guard let home = environment["HOME"], home.hasPrefix("/") else {
            throw DeduplicationError(
                "HOME is not set to an absolute path and neither is XDG_STATE_HOME: no place for the state store "
                    + "(set HOME, or XDG_STATE_HOME, or give --state PATH)")
        }
        return home + "/.local/state/kindly-push/state.sqlite3"
    }

    /// Opens the store at `path`, creating the file (0600) and its folder (0700) when missing,
    /// its secret (`PATH.key`, 0600) and its tables when new.
    ///
    /// Throws ``DeduplicationError`` when the folder or file is too open, the file is not a
    /// database (corrupt), or the database cannot be read or written.
    public init(path: String, busyTimeout: Duration = SQLiteDeduplicator.defaultBusyTimeout) throws(DeduplicationError) {
        self.path = path
        try SQLiteDeduplicator.preparePrivateFile(path)
        secret = try SQLiteDeduplicator.secret(beside: path)
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_FULLMUTEX
        let opened = sqlite3_open_v2(path, &handle, flags, nil)
        guard let handle else { throw DeduplicationError("\(path): cannot open the state store (out of memory)") }
        let database = Database(handle, path: path)
        guard opened == SQLITE_OK else { throw database.error("cannot open the state store") }
        let milliseconds = DesktopDeadline.milliseconds(busyTimeout, roundingUp: true)
        sqlite3_busy_timeout(handle, milliseconds)
        try database.setUp(within: busyTimeout)
        do throws(Errno) {
            lock = try valueOrErrno { open(path + ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        } catch {
            throw DeduplicationError("\(path).lock: cannot open: \(error)")
        }
        self.database = Locked(database)
    }

    deinit {
        FileDescriptor(rawValue: lock).close()
    }

    /// The store's digest of `bytes` in `domain`.
    private func digest(_ domain: String, _ bytes: [UInt8]) -> [UInt8] {
        let input = Array("kindly-push/\(domain)/v2".utf8) + [0] + bytes
        return input.withUnsafeBytes { raw in
            secret.withUnsafeBytes { key in BLAKE2b.keyedHash(raw, key: key, outputLength: 32) }
        }
    }

    /// The claim and the look-up (one `BEGIN IMMEDIATE` transaction, committed before `post`),
    /// `post`, then the record of its id; all under an exclusive lock on `PATH.lock`, so that
    /// other processes wait from the look-up to the record.
    public func present(_ claim: StoreClaim, at time: Int64, post: (StoreSlot) -> UInt32?) throws(DeduplicationError) -> ClaimResult {
        let key = digest(claim.namespace == .message ? "message" : "placeholder", claim.identity)
        let chat = claim.chat.map { digest("chat", Array($0.utf8)) }
        let envelope = claim.envelope.map { digest("envelope", $0) }
        return try database.withLock { database throws(DeduplicationError) in
            do throws(Errno) {
                try nothingOrErrno { flock(lock, LOCK_EX) }
            } catch {
                throw DeduplicationError("\(path).lock: cannot lock: \(error)")
            }
            defer { try? nothingOrErrno { flock(lock, LOCK_UN) } }
            // The claim is committed, marked pending, before the post; the record removes the
            // mark. A mark found here (the lock is ours) is a process killed in between: present
            // again (see the type's documentation).
            var slot = StoreSlot()
            let claimed = try database.transaction { () throws(DeduplicationError) -> Bool in
                try database.run(
                    "INSERT INTO seen (key, at) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET at = excluded.at WHERE ?3 = 0",
                    [.blob(key), .integer(time), .integer(claim.checksDuplicates ? 1 : 0)])
                if sqlite3_changes(database.handle) == 1 {
                    try database.run("INSERT OR REPLACE INTO pending (key, at) VALUES (?1, ?2)", [.blob(key), .integer(time)])
                } else {
                    guard try database.integer("SELECT 1 FROM pending WHERE key = ?1", [.blob(key)]) != nil else { return false }
                }
                if let chat {
                    slot.chatNotification = try database.integer(
                        "SELECT notification FROM chat_banners WHERE key = ?1 AND server = ?2", [.blob(chat), .text(claim.server)]
                    ).flatMap(UInt32.init(exactly:))
                }
                if let envelope {
                    slot.placeholderNotification = try database.integer(
                        "SELECT notification FROM placeholders WHERE key = ?1 AND server = ?2", [.blob(envelope), .text(claim.server)]
                    ).flatMap(UInt32.init(exactly:))
                }
                return true
            }
            // One tag per chat (a banner), or per envelope (a placeholder): keyed, as every key.
            let tagged = chat.map { digest("stack", $0) } ?? envelope.map { digest("stack", $0) }
            slot.stackTag = tagged.map { "kindly-" + Base64.urlEncoded(Array($0.prefix(16))) }
            guard claimed else { return .duplicate }
            killIfAsked(afterPost: false)
            let posted = post(slot)
            killIfAsked(afterPost: true)
            guard let id = posted else {
                // Not shown: the claim goes, so that a later delivery is shown.
                _ = try database.transaction { () throws(DeduplicationError) in
                    try database.run("DELETE FROM seen WHERE key = ?1", [.blob(key)])
                    try database.run("DELETE FROM pending WHERE key = ?1", [.blob(key)])
                    return true
                }
                return .notPosted
            }
            _ = try database.transaction { () throws(DeduplicationError) in
                try database.run("DELETE FROM pending WHERE key = ?1", [.blob(key)])
                if let chat {
                    try database.run(
                        """
                        INSERT INTO chat_banners (key, server, notification, at) VALUES (?1, ?2, ?3, ?4)
                        ON CONFLICT (key) DO UPDATE SET server = excluded.server, notification = excluded.notification, at = excluded.at
                        """,
                        [.blob(chat), .text(claim.server), .integer(Int64(id)), .integer(time)])
                }
                if let envelope {
                    if claim.namespace == .placeholder {
                        try database.run(
                            """
                            INSERT INTO placeholders (key, server, notification, at) VALUES (?1, ?2, ?3, ?4)
                            ON CONFLICT (key) DO UPDATE SET server = excluded.server, notification = excluded.notification, at = excluded.at
                            """,
                            [.blob(envelope), .text(claim.server), .integer(Int64(id)), .integer(time)])
                    } else {
                        try database.run("DELETE FROM placeholders WHERE key = ?1", [.blob(envelope)])
                    }
                }
                return true
            }
            return .posted(id)
        }
    }

    /// Deletes the rows recorded before `time`.
    public func purge(before time: Int64) throws(DeduplicationError) {
        try database.withLock { database throws(DeduplicationError) in
            for table in ["seen", "pending", "chat_banners", "placeholders"] {
                try database.run("DELETE FROM \(table) WHERE at < ?1", [.integer(time)])
            }
        }
    }

    /// How far a followed FILE was read and shown: the file's device and
    /// inode, and the offset after its last line that was handled. A restart on the same file
    /// goes on from there, instead of showing again what the store has forgotten since
    /// (`--dedup-ttl`); another file under that path is read from its start.
    package struct FollowPosition: Sendable, Equatable {
        package var device: UInt64
        package var inode: UInt64
        package var offset: Int64

        package init(device: UInt64, inode: UInt64, offset: Int64) {
            self.device = device
            self.inode = inode
            self.offset = offset
        }
    }

    /// Where `path` was read up to, if a run recorded it.
    package func followPosition(of path: String) throws(DeduplicationError) -> FollowPosition? {
        let key = digest("follow", Array(path.utf8))
        return try database.withLock { database throws(DeduplicationError) in
            let sql = "SELECT device, inode, offset FROM follow_positions WHERE key = ?1"
            guard let row = try database.integers(sql, [.blob(key)], columns: 3) else { return nil }
            return FollowPosition(device: UInt64(bitPattern: row[0]), inode: UInt64(bitPattern: row[1]), offset: row[2])
        }
    }

    /// Records where `path` was read up to (kept for as long as the store, not purged: one row
    /// per followed path).
    package func recordFollowPosition(_ position: FollowPosition, of path: String, at time: Int64) throws(DeduplicationError) {
        let key = digest("follow", Array(path.utf8))
        try database.withLock { database throws(DeduplicationError) in
            try database.run(
                "INSERT OR REPLACE INTO follow_positions (key, device, inode, offset, at) VALUES (?1, ?2, ?3, ?4, ?5)",
                [
                    .blob(key), .integer(Int64(bitPattern: position.device)), .integer(Int64(bitPattern: position.inode)),
                    .integer(position.offset), .integer(time),
                ])
        }
    }

    /// The store's secret, `PATH.key`: read when it exists (a regular 0600 file of 32 bytes),
    /// else made from the system's CSPRNG and published with `link`, so that of several
    /// processes opening a new store at once, all end up with the one secret that won.
    private static func secret(beside path: String) throws(DeduplicationError) -> SecureBytes {
        let secretPath = path + ".key"
        for _ in 0..<3 {
            if let existing = try readSecret(secretPath) { return existing }
            let fresh = SecureBytes.random(count: 32)
            let temporary = "\(secretPath).\(Base64.urlEncoded(Sodium.randomBytes(count: 9))).tmp"
            try? nothingOrErrno { unlink(temporary) }
            let descriptor: Int32
            do throws(Errno) {
                descriptor = try valueOrErrno { open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
            } catch {
                throw DeduplicationError("\(temporary): cannot create the store's secret: \(error)")
            }
            defer { try? nothingOrErrno { unlink(temporary) } }
            do throws(Errno) {
                defer { FileDescriptor(rawValue: descriptor).close() }
                try fresh.withUnsafeBytes { (bytes) throws(Errno) in try FileDescriptor(rawValue: descriptor).writeAll(bytes) }
                try nothingOrErrno { fsync(descriptor) }
            } catch {
                throw DeduplicationError("\(temporary): cannot write the store's secret: \(error)")
            }
            do throws(Errno) {
                try nothingOrErrno { link(temporary, secretPath) }
                return fresh
            } catch {
                // Another process published one first: it is read on the next round.
                guard error.rawValue == EEXIST else {
                    throw DeduplicationError("\(secretPath): cannot publish the store's secret: \(error)")
                }
            }
        }
        throw DeduplicationError("\(secretPath): the store's secret keeps changing")
    }

    private static func readSecret(_ path: String) throws(DeduplicationError) -> SecureBytes? {
        let descriptor: Int32
        do throws(Errno) {
            descriptor = try valueOrErrno { open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) }
        } catch {
            if error == .noSuchFileOrDirectory { return nil }
            throw DeduplicationError("\(path): cannot open the store's secret: \(error)")
        }
        defer { FileDescriptor(rawValue: descriptor).close() }
        guard let status = try? FileStatus.of(descriptor: descriptor), status.st_mode & S_IFMT == S_IFREG else {
            throw DeduplicationError("\(path): the store's secret is not a regular file")
        }
        guard status.st_mode & 0o077 == 0 else {
            throw DeduplicationError(
                "\(path): permissions \(String(status.st_mode & 0o777, radix: 8)) are too open; the store's secret must be 0600")
        }
        guard status.st_size == 32 else { throw DeduplicationError("\(path): the store's secret is not 32 bytes") }
        return try SecureBytes(count: 32) { buffer throws(DeduplicationError) in
            var filled = 0
            do throws(Errno) {
                try FileDescriptor(rawValue: descriptor).readAll(into: buffer, filled: &filled)
            } catch {
                throw DeduplicationError("\(path): cannot read the store's secret: \(error)")
            }
            guard filled == 32 else { throw DeduplicationError("\(path): cannot read the store's secret") }
        }
    }

    /// Makes the folder private (0700, created when missing) and the file a regular 0600 file
    /// (created when missing, refused when group or others can read it).
    private static func preparePrivateFile(_ path: String) throws(DeduplicationError) {
        let folder = PrivateFile.folderName(of: path)
        do throws(PrivateFileError) {
            try PrivateFile.makePrivateFolder(folder)
        } catch {
            if case .tooOpen(let path, let mode) = error {
                throw DeduplicationError(
                    "\(path): permissions \(String(mode & 0o777, radix: 8)) are too open; the state folder must be 0700 (chmod 700 \(path))"
                )
            }
            throw DeduplicationError(error.description)
        }
        let descriptor: Int32
        do throws(Errno) {
            descriptor = try valueOrErrno { open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600) }
        } catch {
            if error.rawValue == ELOOP { throw DeduplicationError("\(path): not a regular file") }
            throw DeduplicationError("\(path): cannot open: \(error)")
        }
        defer { FileDescriptor(rawValue: descriptor).close() }
        let status: stat
        do throws(Errno) {
            status = try FileStatus.of(descriptor: descriptor)
        } catch {
            throw DeduplicationError("\(path): cannot stat: \(error)")
        }
        guard status.st_mode & S_IFMT == S_IFREG else { throw DeduplicationError("\(path): not a regular file") }
        guard status.st_mode & 0o077 == 0 else {
            let permissions = String(status.st_mode & 0o777, radix: 8)
            throw DeduplicationError("\(path): permissions \(permissions) are too open; the state file must be 0600 (chmod 600 \(path))")
        }
    }
}

/// One SQLite connection. Used under the store's lock only.
private final class Database: @unchecked Sendable {
    // @unchecked: the connection is only touched under the owning store's lock.
    let handle: OpaquePointer
    let path: String

    enum Value {
        case integer(Int64)
        case text(String)
        case blob([UInt8])
    }

    init(_ handle: OpaquePointer, path: String) {
        self.handle = handle
        self.path = path
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    func error(_ what: String) -> DeduplicationError {
        DeduplicationError("\(path): \(what): \(String(cString: sqlite3_errmsg(handle)))")
    }

    /// WAL mode and the tables. The journal mode and the schema are set while other processes may
    /// be doing the same, so a busy answer is retried until `budget` is spent (switching to WAL
    /// can be refused without the busy handler being asked).
    func setUp(within budget: Duration) throws(DeduplicationError) {
        let deadline = ContinuousClock.now.advanced(by: budget)
        let steps = [
            "PRAGMA journal_mode = WAL",
            "PRAGMA synchronous = NORMAL",
            """
            BEGIN IMMEDIATE;
            DROP TABLE IF EXISTS shown;
            DROP TABLE IF EXISTS chats;
            CREATE TABLE IF NOT EXISTS seen (key BLOB PRIMARY KEY NOT NULL, at INTEGER NOT NULL) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS seen_at ON seen (at);
            CREATE TABLE IF NOT EXISTS pending (key BLOB PRIMARY KEY NOT NULL, at INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS chat_banners (
                key BLOB PRIMARY KEY NOT NULL, server TEXT NOT NULL, notification INTEGER NOT NULL, at INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS placeholders (
                key BLOB PRIMARY KEY NOT NULL, server TEXT NOT NULL, notification INTEGER NOT NULL, at INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS follow_positions (
                key BLOB PRIMARY KEY NOT NULL, device INTEGER NOT NULL, inode INTEGER NOT NULL, offset INTEGER NOT NULL,
                at INTEGER NOT NULL
            ) WITHOUT ROWID;
            COMMIT;
            """,
        ]
        for step in steps {
            while true {
                let status = sqlite3_exec(handle, step, nil, nil, nil)
                if status == SQLITE_OK { break }
                if sqlite3_get_autocommit(handle) == 0 { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
                let primary = status & 0xFF
                guard primary == SQLITE_BUSY || primary == SQLITE_LOCKED, ContinuousClock.now < deadline else {
                    throw error("cannot set up the state store")
                }
                try? nothingOrErrno(retryOnInterrupt: false) { usleep(5_000) }
            }
        }
        guard try text("PRAGMA journal_mode") == "wal" else {
            throw DeduplicationError("\(path): the state store could not be switched to WAL mode")
        }
    }

    /// `BEGIN IMMEDIATE`: the write lock now, waiting (the busy timeout) for another process's.
    func begin() throws(DeduplicationError) {
        guard sqlite3_exec(handle, "BEGIN IMMEDIATE", nil, nil, nil) == SQLITE_OK else { throw error("cannot lock the state store") }
    }

    /// `body` in one `BEGIN IMMEDIATE` transaction, committed when it returns, rolled back when it throws.
    func transaction<Result>(_ body: () throws(DeduplicationError) -> Result) throws(DeduplicationError) -> Result {
        try begin()
        do throws(DeduplicationError) {
            let result = try body()
            try commit()
            return result
        } catch {
            rollback()
            throw error
        }
    }

    func commit() throws(DeduplicationError) {
        guard sqlite3_exec(handle, "COMMIT", nil, nil, nil) == SQLITE_OK else { throw error("cannot write the state store") }
    }

    func rollback() {
        if sqlite3_get_autocommit(handle) == 0 { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
    }

    /// Runs one statement that returns no rows.
    func run(_ sql: String, _ values: [Value]) throws(DeduplicationError) {
        try withStatement(sql, values) { statement throws(DeduplicationError) in
            let status = sqlite3_step(statement)
            guard status == SQLITE_DONE || status == SQLITE_ROW else { throw error("cannot write the state store") }
        }
    }

    /// The first column of the first row, as an integer; `nil` without rows.
    func integer(_ sql: String, _ values: [Value]) throws(DeduplicationError) -> Int64? {
        try withStatement(sql, values) { statement throws(DeduplicationError) in
            switch sqlite3_step(statement) {
            case SQLITE_ROW: return sqlite3_column_int64(statement, 0)
            case SQLITE_DONE: return nil
            default: throw error("cannot read the state store")
            }
        }
    }

    /// The first `columns` columns of the first row, as integers; `nil` without rows.
    func integers(_ sql: String, _ values: [Value], columns: Int32) throws(DeduplicationError) -> [Int64]? {
        try withStatement(sql, values) { statement throws(DeduplicationError) in
            switch sqlite3_step(statement) {
            case SQLITE_ROW: return (0..<columns).map { sqlite3_column_int64(statement, $0) }
            case SQLITE_DONE: return nil
            default: throw error("cannot read the state store")
            }
        }
    }

    private func text(_ sql: String) throws(DeduplicationError) -> String? {
        try withStatement(sql, []) { statement throws(DeduplicationError) in
            guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else {
                throw error("cannot read the state store")
            }
            return String(cString: text)
        }
    }

    private func withStatement<Result>(
        _ sql: String, _ values: [Value], _ body: (OpaquePointer) throws(DeduplicationError) -> Result
    ) throws(DeduplicationError) -> Result {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw error("cannot use the state store")
        }
        defer { sqlite3_finalize(statement) }
        // SQLITE_TRANSIENT: SQLite copies the bytes, which the C macro says with a pointer of -1.
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            switch value {
            case .integer(let number):
                sqlite3_bind_int64(statement, position, number)
            case .text(let text):
                sqlite3_bind_text(statement, position, text, -1, transient)
            case .blob(let bytes):
                _ = bytes.withUnsafeBytes { sqlite3_bind_blob(statement, position, $0.baseAddress, Int32($0.count), transient) }
            }
        }
        return try body(statement)
    }
}
