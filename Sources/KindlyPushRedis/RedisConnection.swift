internal import CHiredis
internal import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// A reply of the server, copied out of hiredis's reply object.
enum RedisReply {
    case string([UInt8])
    case integer(Int)
    case array([RedisReply])
    case null
    case status(String)
    /// An error reply (`WRONGTYPE ...`, `NOSCRIPT ...`): the command failed, the connection is fine.
    case error(String)

    var text: String? {
        switch self {
        case .string(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .status(let text): return text
        default: return nil
        }
    }

    var elements: [RedisReply] {
        if case .array(let elements) = self { return elements }
        return []
    }

    /// The error reply's message, `nil` for any other reply.
    var errorMessage: String? {
        if case .error(let message) = self { return message }
        return nil
    }
}

/// The connection is gone or never came (refused, timed out, closed by the server): the worker
/// reconnects; at start, an `io` error.
struct RedisConnectionLost: Error {
    let reason: String
    /// A failure that is waited out even at start (a replica where the primary was expected, a
    /// cluster redirection), where a server that does not answer at all is an error at once.
    var transient = false
}

/// One blocking hiredis connection with connect and command timeouts, so that no call waits
/// longer than the timeout for a server that does not answer. Commands are sent with
/// `redisAppendCommandArgv` (binary-safe), several at once as a pipeline.
final class RedisConnection {
    /// What one reply may allocate: the bytes the reader holds
    /// unparsed, and the objects (strings, integers, arrays and their element slots) it builds.
    /// A reply over either ends the connection before hiredis allocates more.
    struct Limits {
        var bytes: Int
        var objects: Int
    }

    /// hiredis's connection, or `nil` for TLS (``tls``).
    private let context: UnsafeMutablePointer<redisContext>?
    private let tls: RedisTLSStream?
    private let limits: Limits
    /// How long a reply may take (milliseconds), for the message of one that did not come.
    private let commandTimeout: Int

    /// Connects to `endpoint` within `connectTimeout` ms; reads and writes then time out after
    /// `commandTimeout` ms; replies are held to `limits`.
    init(
        _ endpoint: RedisOptions.Endpoint, tls options: RedisOptions.TLS? = nil, connectTimeout: Int, commandTimeout: Int, limits: Limits
    ) throws(RedisConnectionLost) {
        self.limits = limits
        self.commandTimeout = commandTimeout
        if let options, case .tcp(let host, let port) = endpoint {
            let stream = try RedisTLSStream(
                host: host, port: port, tls: options, connectTimeout: connectTimeout, commandTimeout: commandTimeout)
            tls = stream
            context = nil
            BoundedReplies.install(on: stream.reader)
            return
        }
        tls = nil
        let connectLimit = timeval(tv_sec: connectTimeout / 1000, tv_usec: (connectTimeout % 1000) * 1000)
        let made: UnsafeMutablePointer<redisContext>?
        let place: String
        switch endpoint {
        case .tcp(let host, let port):
            made = redisConnectWithTimeout(host, port, connectLimit)
            place = "\(host):\(port)"
        case .unix(let path):
            try Self.checkSocket(path)
            made = redisConnectUnixWithTimeout(path, connectLimit)
            place = path
        }
        guard let made else { throw RedisConnectionLost(reason: "cannot connect to Redis at \(place): out of memory") }
        if made.pointee.err != 0 {
            let reason = Self.errorText(made)
            redisFree(made)
            throw RedisConnectionLost(reason: "cannot connect to Redis at \(place): \(reason)")
        }
        context = made
        let commandLimit = timeval(tv_sec: commandTimeout / 1000, tv_usec: (commandTimeout % 1000) * 1000)
        if redisSetTimeout(made, commandLimit) != REDIS_OK {
            let reason = Self.errorText(made)
            redisFree(made)
            throw RedisConnectionLost(reason: "cannot set the timeouts of the connection to \(place): \(reason)")
        }
        if let reader = made.pointee.reader { BoundedReplies.install(on: reader) }
    }

    deinit { if let context { redisFree(context) } }

    /// Refuses a Unix socket that another user could have put there for the password (`AUTH`)
    /// and the commit scripts' outputs: in a folder anyone may write to (`/tmp`, sticky or not),
    /// the socket must be this user's or root's. A socket in a folder only its owner or group may
    /// write to (Debian's `/run/redis`) is the server's, whoever runs it.
    static func checkSocket(_ path: String) throws(RedisConnectionLost) {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }  // connecting says why
        guard status.st_mode & S_IFMT == S_IFSOCK else {
            throw RedisConnectionLost(reason: "\(path) is not a Unix socket")
        }
        let slash = path.utf8.lastIndex(of: UInt8(ascii: "/"))
        let folder = slash.map { $0 == path.utf8.startIndex ? "/" : String(path.utf8[..<$0])! } ?? "."
        guard let folderStatus = try? FileStatus.of(folder) else { return }
        if folderStatus.st_mode & 0o002 != 0, status.st_uid != geteuid(), status.st_uid != 0 {
            throw RedisConnectionLost(
                reason: "the socket \(path) belongs to another user (uid \(status.st_uid)) in \(folder), which anyone may write to: "
                    + "not trusted with the password; put the server's socket in a folder of its own (Debian: /run/redis)")
        }
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: &context.pointee.errstr) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return bytes.isEmpty ? "error \(context.pointee.err)" : String(decoding: bytes, as: UTF8.self)
        }
    }

    /// Why a read failed: the timeout said as one (hiredis gives the socket's EAGAIN as
    /// "Resource temporarily unavailable"), else hiredis's error.
    private func readFailure(_ context: UnsafeMutablePointer<redisContext>) -> String {
        let text = Self.errorText(context)
        guard context.pointee.err == REDIS_ERR_IO, text == Errno(rawValue: EAGAIN).description else { return text }
        return Self.noAnswer(within: commandTimeout)
    }

    /// What to say of a server's error reply `message` to a command of the session: for
    /// `NOAUTH` (no password given), where to give one.
    static func refusal(_ message: String) -> String {
        guard message.hasPrefix("NOAUTH") else { return "Redis: \(message)" }
        return "Redis asks for a password (\(message)): give it in \(RedisOptions.passwordVariable) or \(RedisOptions.passwordFileVariable)"
    }

    /// A reply that did not come within `milliseconds`.
    static func noAnswer(within milliseconds: Int) -> String {
        "Redis did not answer within \(Double(milliseconds) / 1000) s (a server that hangs, or one too busy to answer)"
    }

    /// What went wrong on the connection: hiredis's error, or for TLS its reader's.
    private var errorText: String {
        if let context { return Self.errorText(context) }
        guard let tls else { return "not connected" }
        return withUnsafeBytes(of: &tls.reader.pointee.errstr) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// Sends what is in the output buffer.
    private func flush() throws(RedisConnectionLost) {
        if let tls { return try tls.flush() }
        guard let context else { return }
        var done: Int32 = 0
        while done == 0 {
            guard redisBufferWrite(context, &done) == REDIS_OK else { throw RedisConnectionLost(reason: Self.errorText(context)) }
        }
    }

    /// Sends one command and reads its reply.
    func command(_ arguments: [[UInt8]]) throws(RedisConnectionLost) -> RedisReply {
        try pipeline([arguments])[0]
    }

    /// Sends the commands in one write and reads their replies, in order.
    func pipeline(_ commands: [[[UInt8]]]) throws(RedisConnectionLost) -> [RedisReply] {
        for arguments in commands { try append(arguments) }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands { replies.append(try receive()) }
        return replies
    }

    /// Sends one command now, without waiting for its reply: the server works on it while the
    /// caller does something else; ``receive()`` reads the replies later, in the order sent.
    func send(_ arguments: [[UInt8]]) throws(RedisConnectionLost) {
        try append(arguments)
        try flush()
    }

    /// Reads the reply of the oldest command sent and not yet answered.
    ///
    /// As `redisGetReply`, with the bounds of ``Limits``: between reads from the socket the bytes
    /// held unparsed are counted, and hiredis's object constructors (``BoundedReplies``) refuse
    /// an array, a string or an object past the limits before allocating it.
    func receive() throws(RedisConnectionLost) -> RedisReply {
        var raw: UnsafeMutableRawPointer?
        BoundedReplies.start(limits)
        // What is still in the output buffer goes first, as redisGetReply sends it.
        try flush()
        while true {
            let status = tls.map { redisReaderGetReply($0.reader, &raw) } ?? context.map { redisGetReplyFromReader($0, &raw) } ?? REDIS_ERR
            guard status == REDIS_OK else { throw RedisConnectionLost(reason: BoundedReplies.refusal ?? errorText) }
            if raw != nil { break }
            if let tls {
                try tls.fill()
            } else if let context {
                guard redisBufferRead(context) == REDIS_OK else { throw RedisConnectionLost(reason: readFailure(context)) }
            }
            if let reader = tls?.reader ?? context?.pointee.reader, reader.pointee.len - reader.pointee.pos > limits.bytes {
                throw RedisConnectionLost(reason: "a reply of the server is over \(limits.bytes) bytes: the connection is closed")
            }
        }
        guard let raw else { throw RedisConnectionLost(reason: "no reply") }
        defer { freeReplyObject(raw) }
        return Self.copy(raw.assumingMemoryBound(to: redisReply.self))
    }

    /// Puts one command in hiredis's output buffer. The arguments are laid end to end in one
    /// buffer, zeroed afterwards (AUTH carries the password).
    private func append(_ arguments: [[UInt8]]) throws(RedisConnectionLost) {
        if let tls { return try tls.append(arguments) }
        guard let context else { return }
        var flat: [UInt8] = []
        flat.reserveCapacity(arguments.reduce(0) { $0 + $1.count } + 1)
        var lengths: [Int] = []
        lengths.reserveCapacity(arguments.count)
        for argument in arguments {
            flat += argument
            lengths.append(argument.count)
        }
        flat.append(0)
        defer { flat.wipeCapacity() }
        let status = flat.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            var pointers: [UnsafePointer<CChar>?] = []
            pointers.reserveCapacity(arguments.count)
            var offset = 0
            for length in lengths {
                pointers.append(base + offset)
                offset += length
            }
            return pointers.withUnsafeMutableBufferPointer { argv in
                lengths.withUnsafeBufferPointer { argvlen in
                    redisAppendCommandArgv(context, Int32(arguments.count), argv.baseAddress, argvlen.baseAddress)
                }
            }
        }
        guard status == REDIS_OK else { throw RedisConnectionLost(reason: Self.errorText(context)) }
    }

    private static func copy(_ reply: UnsafeMutablePointer<redisReply>) -> RedisReply {
        let value = reply.pointee
        func bytes() -> [UInt8] {
            guard let text = value.str, value.len > 0 else { return [] }
            return [UInt8](UnsafeRawBufferPointer(start: text, count: Int(value.len)))
        }
        switch value.type {
        case REDIS_REPLY_STRING: return .string(bytes())
        case REDIS_REPLY_INTEGER: return .integer(Int(value.integer))
        case REDIS_REPLY_NIL: return .null
        case REDIS_REPLY_STATUS: return .status(String(decoding: bytes(), as: UTF8.self))
        case REDIS_REPLY_ERROR: return .error(String(decoding: bytes(), as: UTF8.self))
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(Int(value.elements))
            for index in 0..<Int(value.elements) {
                if let element = value.element[index] { elements.append(copy(element)) } else { elements.append(.null) }
            }
            return .array(elements)
        default: return .null
        }
    }
}

/// hiredis 0.14 has no limits of its own on a reply's element counts (`maxelements` came in
/// 1.0): its reader builds each object through a table of constructors, which this replaces
/// with ones that count what the reply has built and refuse (return NULL: hiredis then fails the
/// read, "out of memory", and frees what it built) an array, string or object past the
/// ``RedisConnection/Limits`` of the reply being read. A worker is one thread: the counts are
/// this process's.
enum BoundedReplies {
    nonisolated(unsafe) private static var original: UnsafeMutablePointer<redisReplyObjectFunctions>?
    nonisolated(unsafe) private static var table = redisReplyObjectFunctions(
        createString: { task, text, length in
            BoundedReplies.admit(1, bytes: length) ? BoundedReplies.original?.pointee.createString?(task, text, length) : nil
        },
        createArray: { task, elements in
            BoundedReplies.admit(1 + Int(max(0, elements)), bytes: 0) ? BoundedReplies.original?.pointee.createArray?(task, elements) : nil
        },
        createInteger: { task, value in
            BoundedReplies.admit(1, bytes: 0) ? BoundedReplies.original?.pointee.createInteger?(task, value) : nil
        },
        createNil: { task in BoundedReplies.admit(1, bytes: 0) ? BoundedReplies.original?.pointee.createNil?(task) : nil },
        freeObject: { object in BoundedReplies.original?.pointee.freeObject?(object) }
    )
    nonisolated(unsafe) private static var objects = 0
    nonisolated(unsafe) private static var limits = RedisConnection.Limits(bytes: 0, objects: 0)
    /// Why the last read was refused, `nil` when it was not.
    nonisolated(unsafe) private(set) static var refusal: String?

    /// Puts the bounded constructors in `context`'s reader (keeping hiredis's own to call).
    static func install(on reader: UnsafeMutablePointer<redisReader>) {
        if original == nil { original = reader.pointee.fn }
        withUnsafeMutablePointer(to: &table) { reader.pointee.fn = $0 }
    }

    /// Starts counting a new reply.
    static func start(_ bounds: RedisConnection.Limits) {
        objects = 0
        limits = bounds
        refusal = nil
    }

    private static func admit(_ count: Int, bytes: Int) -> Bool {
        objects += count
        if objects > limits.objects {
            refusal = "a reply of the server holds over \(limits.objects) elements: the connection is closed"
            return false
        }
        if bytes > limits.bytes {
            refusal = "a reply of the server holds a string of \(bytes) bytes, over \(limits.bytes): the connection is closed"
            return false
        }
        return true
    }
}
