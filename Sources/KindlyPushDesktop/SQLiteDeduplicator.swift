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
/// - A claim is one `INSERT … ON CONFLICT DO NOTHING`: of eight processes claiming one push at
///   once, exactly one inserts the row, and only that one shows the banner.
/// - Two tables, keyed by 32-byte BLAKE2b digests (``DeduplicationKey``, ``ChatKey``): no message
///   id or chat id is stored in clear.
public final class SQLiteDeduplicator: Deduplicator {
    /// The file.
    public let path: String

    private let database: Locked<Database>

    /// How long a statement waits for another process's write before it fails.
    public static let defaultBusyTimeout: Duration = .seconds(5)

    /// `$XDG_STATE_HOME/kindly-push/state.sqlite3`, by default
    /// `~/.local/state/kindly-push/state.sqlite3`.
    public static func defaultPath(environment: [String: String]) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/kindly-push/state.sqlite3" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "."
        return home + "/.local/state/kindly-push/state.sqlite3"
    }

    /// Opens the store at `path`, creating the file (0600) and its folder (0700) when missing,
    /// and its tables when new.
    ///
    /// Throws ``DeduplicationError`` when the folder or file is too open, the file is not a
    /// database (corrupt), or the database cannot be read or written.
    public init(path: String, busyTimeout: Duration = SQLiteDeduplicator.defaultBusyTimeout) throws(DeduplicationError) {
        self.path = path
        try SQLiteDeduplicator.preparePrivateFile(path)
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_FULLMUTEX
        let opened = sqlite3_open_v2(path, &handle, flags, nil)
        guard let handle else { throw DeduplicationError("\(path): cannot open the state store (out of memory)") }
        let database = Database(handle, path: path)
        guard opened == SQLITE_OK else { throw database.error("cannot open the state store") }
        let milliseconds = DesktopDeadline.milliseconds(busyTimeout, roundingUp: true)
        sqlite3_busy_timeout(handle, milliseconds)
        try database.setUp(within: busyTimeout)
        self.database = Locked(database)
    }

    /// Records `key` with one `INSERT … ON CONFLICT DO NOTHING`; `false` when another run or
    /// process recorded it first.
    public func claim(_ key: DeduplicationKey, at time: Int64) throws(DeduplicationError) -> Bool {
        try database.withLock { database throws(DeduplicationError) in
            try database.run(
                "INSERT INTO shown (key, at) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING", [.blob(key.digest), .integer(time)])
            return sqlite3_changes(database.handle) == 1
        }
    }

    /// Deletes `key`'s row.
    public func release(_ key: DeduplicationKey) throws(DeduplicationError) {
        try database.withLock { database throws(DeduplicationError) in
            try database.run("DELETE FROM shown WHERE key = ?1", [.blob(key.digest)])
        }
    }

    /// The id of `chat`'s last banner, when `server` gave it.
    public func notificationID(for chat: ChatKey, server: String) throws(DeduplicationError) -> UInt32? {
        try database.withLock { database throws(DeduplicationError) in
            try database.integer(
                "SELECT notification FROM chats WHERE key = ?1 AND server = ?2", [.blob(chat.digest), .text(server)]
            ).flatMap(UInt32.init(exactly:))
        }
    }

    /// Records `id` as `chat`'s last banner (an upsert).
    public func setNotificationID(_ id: UInt32, for chat: ChatKey, server: String, at time: Int64) throws(DeduplicationError) {
        try database.withLock { database throws(DeduplicationError) in
            try database.run(
                """
                INSERT INTO chats (key, server, notification, at) VALUES (?1, ?2, ?3, ?4)
                ON CONFLICT (key) DO UPDATE SET server = excluded.server, notification = excluded.notification, at = excluded.at
                """,
                [.blob(chat.digest), .text(server), .integer(Int64(id)), .integer(time)])
        }
    }

    /// Deletes the rows recorded before `time`.
    public func purge(before time: Int64) throws(DeduplicationError) {
        try database.withLock { database throws(DeduplicationError) in
            try database.run("DELETE FROM shown WHERE at < ?1", [.integer(time)])
            try database.run("DELETE FROM chats WHERE at < ?1", [.integer(time)])
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
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            if code == ELOOP { throw DeduplicationError("\(path): not a regular file") }
            throw DeduplicationError("\(path): cannot open: \(String(cString: strerror(code)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw DeduplicationError("\(path): cannot stat: \(String(cString: strerror(errno)))")
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
            CREATE TABLE IF NOT EXISTS shown (key BLOB PRIMARY KEY NOT NULL, at INTEGER NOT NULL) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS shown_at ON shown (at);
            CREATE TABLE IF NOT EXISTS chats (
                key BLOB PRIMARY KEY NOT NULL, server TEXT NOT NULL, notification INTEGER NOT NULL, at INTEGER NOT NULL
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
                usleep(5_000)
            }
        }
        guard try text("PRAGMA journal_mode") == "wal" else {
            throw DeduplicationError("\(path): the state store could not be switched to WAL mode")
        }
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
