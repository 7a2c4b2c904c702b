internal import CHiredis
internal import KindlyPushCLI
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
}

/// One blocking hiredis connection with connect and command timeouts, so that no call waits
/// longer than the timeout for a server that does not answer. Commands are sent with
/// `redisAppendCommandArgv` (binary-safe), several at once as a pipeline.
final class RedisConnection {
    private let context: UnsafeMutablePointer<redisContext>

    /// Connects to `endpoint` within `connectTimeout` ms; reads and writes then time out after
    /// `commandTimeout` ms.
    init(_ endpoint: RedisOptions.Endpoint, connectTimeout: Int, commandTimeout: Int) throws(RedisConnectionLost) {
        let connectLimit = timeval(tv_sec: connectTimeout / 1000, tv_usec: (connectTimeout % 1000) * 1000)
        let made: UnsafeMutablePointer<redisContext>?
        let place: String
        switch endpoint {
        case .tcp(let host, let port):
            made = redisConnectWithTimeout(host, port, connectLimit)
            place = "\(host):\(port)"
        case .unix(let path):
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
        if redisSetTimeout(context, commandLimit) != REDIS_OK {
            let reason = Self.errorText(context)
            redisFree(context)
            throw RedisConnectionLost(reason: "cannot set the timeouts of the connection to \(place): \(reason)")
        }
    }

    deinit { redisFree(context) }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: &context.pointee.errstr) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return bytes.isEmpty ? "error \(context.pointee.err)" : String(decoding: bytes, as: UTF8.self)
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
        var done: Int32 = 0
        while done == 0 {
            guard redisBufferWrite(context, &done) == REDIS_OK else { throw RedisConnectionLost(reason: Self.errorText(context)) }
        }
    }

    /// Reads the reply of the oldest command sent and not yet answered.
    func receive() throws(RedisConnectionLost) -> RedisReply {
        var raw: UnsafeMutableRawPointer?
        guard redisGetReply(context, &raw) == REDIS_OK, let raw else {
            throw RedisConnectionLost(reason: Self.errorText(context))
        }
        defer { freeReplyObject(raw) }
        return Self.copy(raw.assumingMemoryBound(to: redisReply.self))
    }

    /// Puts one command in hiredis's output buffer. The arguments are laid end to end in one
    /// buffer, zeroed afterwards (AUTH carries the password).
    private func append(_ arguments: [[UInt8]]) throws(RedisConnectionLost) {
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
