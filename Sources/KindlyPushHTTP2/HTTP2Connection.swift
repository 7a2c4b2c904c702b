internal import CNghttp2
internal import COpenSSL
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// One connection of an ``HTTP2Client``: a non-blocking TCP socket, TLS from OpenSSL over it
/// (the server's certificate verified, ALPN `h2` required), and an nghttp2 client session fed
/// through its memory interface. It never blocks: the client's one `poll` says when it can go on.
///
/// Its requests may be submitted from the start: nghttp2 holds their frames until the TLS
/// handshake has chosen `h2`, and nothing is written before.
final class HTTP2Connection {
    enum State {
        /// The host name is being looked up (``HostLookup``, on a thread of its own).
        case resolving
        /// The TCP connection is being made (`connect` in progress).
        case connecting
        /// The TLS handshake is under way.
        case handshaking
        /// HTTP/2 frames go both ways.
        case open
        /// It ended: its requests are finished, its resources freed.
        case closed
    }

    unowned let client: HTTP2Client
    /// Counted from 1 by the client.
    let number: Int
    private(set) var state = State.connecting
    private var descriptor: Int32 = -1
    private var ssl: OpaquePointer?
    private(set) var session: OpaquePointer?
    /// The addresses the host resolved to, as `sockaddr` bytes, and the one tried now.
    private var addresses: [[UInt8]] = []
    private var addressIndex = 0
    /// The host name's lookup while it is under way.
    private var lookup: HostLookup?
    /// Why the connection failed before it could wait for anything (resolution, socket): the
    /// client ends it at its next wake-up.
    private(set) var setupFailure: HTTP2Failure?
    /// When the TCP connection and the TLS handshake must be done (monotonic milliseconds).
    private let connectDeadline: Int
    /// What `poll` waits for during the handshake (what OpenSSL asked for).
    private var handshakeEvents = Int16(POLLOUT)
    /// TLS wants to write before it can read on (a renegotiation, rare).
    private var readWantsWrite = false
    /// The peer's SETTINGS came: until then one request at a time.
    private(set) var settingsReceived = false
    /// How many requests may be in flight at once: the peer's SETTINGS_MAX_CONCURRENT_STREAMS
    /// (within the client's own bound), 1 before its SETTINGS.
    private(set) var limit = 1
    /// The peer sent GOAWAY: no new request goes on this connection, which ends once the
    /// streams below the GOAWAY's last stream id are answered.
    private(set) var goingAway = false
    /// Requests submitted and not finished.
    private(set) var inFlight = 0
    /// Every exchange submitted, in submission order (and so of deadline), from `firstSent` on.
    private var sent: [HTTP2Exchange] = []
    private var firstSent = 0
    /// Frames that nghttp2 made and TLS has not taken yet, from `outputStart` on.
    private var output: [UInt8] = []
    private var outputStart = 0

    init(client: HTTP2Client, number: Int) {
        self.client = client
        self.number = number
        connectDeadline = MonotonicClock.milliseconds() + client.configuration.connectTimeout
        output.reserveCapacity(1 << 16)
        do throws(HTTP2Failure) {
            if let failure = client.trustFailure { throw failure }
            try makeSession()
            let lookup = client.lookup
            if !lookup.isAddress, let started = HostLookup(lookup) {
                self.lookup = started
                state = .resolving
            } else {
                addresses = try HTTP2Client.resolve(lookup)
                try connectNext()
            }
        } catch {
            setupFailure = error
        }
    }

    deinit {
        release()
    }

    /// Whether a request may go on this connection now.
    var hasRoom: Bool { state != .closed && setupFailure == nil && !goingAway && inFlight < limit }

    /// The nghttp2 session and the client's first frames (its SETTINGS: no server push).
    private func makeSession() throws(HTTP2Failure) {
        var made: OpaquePointer?
        guard nghttp2_session_client_new(&made, client.callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0, let made else {
            throw .transport("HTTP/2: out of memory")
        }
        session = made
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        guard nghttp2_submit_settings(made, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count) == 0 else {
            throw .transport("HTTP/2: out of memory")
        }
    }

    /// Starts a non-blocking connection to the next address; fails when none is left.
    private func connectNext() throws(HTTP2Failure) {
        var reason = "no address"
        while addressIndex < addresses.count {
            let address = addresses[addressIndex]
            addressIndex += 1
            do throws(Errno) {
                let family = address.withUnsafeBytes { Int32($0.load(as: sockaddr.self).sa_family) }
                let made = try valueOrErrno {
                    Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                }
                descriptor = made
                var on: Int32 = 1
                try nothingOrErrno { setsockopt(made, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size)) }
                try nothingOrErrno(retryOnInterrupt: false) {
                    address.withUnsafeBytes {
                        Glibc.connect(made, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count))
                    }
                }
            } catch  where error == Errno(EINPROGRESS) || error == .interrupted {
                // Under way: `poll` says when it is done (writable).
                state = .connecting
                return
            } catch {
                reason = error.description
                closeDescriptor()
                continue
            }
            // Connected at once (loopback may be).
            try startTLS()
            return
        }
        throw .transport("cannot connect: \(reason)")
    }

    private func closeDescriptor() {
        guard descriptor >= 0 else { return }
        let closing = descriptor
        descriptor = -1
        do throws(Errno) {
            try nothingOrErrno(retryOnInterrupt: false) { Glibc.close(closing) }
        } catch {
            // Linux releases the descriptor whatever close says: nothing is left to do.
        }
    }

    /// The TLS session over the connected socket, its handshake started.
    private func startTLS() throws(HTTP2Failure) {
        guard let made = SSL_new(client.tlsContext) else { throw .transport("TLS: \(HTTP2Client.sslError())") }
        ssl = made
        let host = client.configuration.host
        if client.hostIsAddress {
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(made), host) == 1 else { throw .transport("TLS: \(HTTP2Client.sslError())") }
        } else {
            guard SSL_set1_host(made, host) == 1,
                // SSL_set_tlsext_host_name, a macro: the name the server chooses its certificate by.
                host.withCString({
                    SSL_ctrl(made, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: $0))
                }) == 1
            else { throw .transport("TLS: \(HTTP2Client.sslError())") }
        }
        guard SSL_set_fd(made, descriptor) == 1 else { throw .transport("TLS: \(HTTP2Client.sslError())") }
        SSL_set_connect_state(made)
        state = .handshaking
        try handshake()
    }

    /// One step of the TLS handshake; once done, `h2` is required of it.
    private func handshake() throws(HTTP2Failure) {
        guard let ssl else { return }
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            var selected: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &selected, &length)
            guard let selected, length == 2, selected[0] == UInt8(ascii: "h"), selected[1] == UInt8(ascii: "2") else {
                throw .noHTTP2
            }
            state = .open
            return
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: handshakeEvents = Int16(POLLIN)
        case SSL_ERROR_WANT_WRITE: handshakeEvents = Int16(POLLOUT)
        default:
            let verify = SSL_get_verify_result(ssl)
            let detail = verify == X509_V_OK ? HTTP2Client.sslError() : String(cString: X509_verify_cert_error_string(verify))
            throw .transport("TLS handshake failed: \(detail)")
        }
    }

    /// Hands `exchange` to nghttp2 with `headers`; false when nghttp2 refuses it.
    func submit(_ exchange: HTTP2Exchange, headers: HTTP2Headers, fields: UnsafeMutablePointer<nghttp2_nv>) -> Bool {
        guard headers.count <= HTTP2Client.maximumFields else { return false }
        guard setupFailure == nil, let session else {
            // A connection that failed before it could start takes the request, which fails with
            // it at the client's next wake-up (a transport failure, tried again as any other).
            exchange.connection = number
            sent.append(exchange)
            inFlight += 1
            return true
        }
        let context = Unmanaged.passUnretained(exchange).toOpaque()
        let stream = headers.bytes.withUnsafeBufferPointer { bytes -> Int32 in
            let base = UnsafeMutablePointer(mutating: bytes.baseAddress!)
            for (index, field) in headers.fields.enumerated() {
                fields[index] = nghttp2_nv(
                    name: base + field.name, value: base + field.value, namelen: field.nameLength, valuelen: field.valueLength,
                    flags: UInt8(field.changes ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            if exchange.requestBody.isEmpty {
                return nghttp2_submit_request(session, nil, fields, headers.count, nil, context)
            }
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: context), read_callback: readBody)
            return nghttp2_submit_request(session, nil, fields, headers.count, &provider, context)
        }
        guard stream > 0 else { return false }
        exchange.streamID = stream
        exchange.connection = number
        exchange.deadline = MonotonicClock.milliseconds() + client.configuration.requestTimeout
        sent.append(exchange)
        inFlight += 1
        return true
    }

    /// What `poll` should wait for on ``socket``; nil when there is nothing to watch.
    var pollEvents: Int16? {
        guard socket >= 0 else { return nil }
        switch state {
        case .resolving: return Int16(POLLIN)
        case .connecting: return Int16(POLLOUT)
        case .handshaking: return handshakeEvents
        case .open: return Int16(POLLIN) | (outputStart < output.count || readWantsWrite ? Int16(POLLOUT) : 0)
        case .closed: return nil
        }
    }

    /// What `poll` watches: the socket, or the lookup's pipe while the host is looked up.
    var socket: Int32 { state == .resolving ? lookup?.descriptor ?? -1 : descriptor }

    /// The earliest deadline of this connection: its connection's, or its oldest request's.
    func nextDeadline() -> Int? {
        if state == .resolving || state == .connecting || state == .handshaking { return connectDeadline }
        while firstSent < sent.count, sent[firstSent].finished { firstSent += 1 }
        return firstSent < sent.count ? sent[firstSent].deadline : nil
    }

    /// Goes on after `poll` saw `events` on the socket (0: only the clock moved).
    func proceed(_ events: Int16, now: Int) {
        do throws(HTTP2Failure) {
            if let setupFailure { throw setupFailure }
            switch state {
            case .resolving:
                // Looked at on every wake-up, not only when the pipe is readable: one lock.
                if let result = lookup?.result {
                    lookup = nil
                    addresses = try result.get()
                    try connectNext()
                }
            case .connecting:
                if events != 0 {
                    var error: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    let reason: String?
                    do throws(Errno) {
                        try nothingOrErrno { getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length) }
                        reason = error == 0 ? nil : Errno(error).description
                    } catch {
                        reason = error.description
                    }
                    if let reason {
                        closeDescriptor()
                        do throws(HTTP2Failure) {
                            try connectNext()
                        } catch {
                            throw .transport("cannot connect: \(reason)")
                        }
                    } else {
                        try startTLS()
                    }
                }
            case .handshaking:
                if events != 0 { try handshake() }
            case .open:
                if events & Int16(POLLIN | POLLHUP | POLLERR) != 0 || (readWantsWrite && events & Int16(POLLOUT) != 0) { try receive() }
            case .closed:
                return
            }
            if state == .resolving, now >= connectDeadline {
                throw .transport("cannot resolve \(client.configuration.host): no answer within \(client.configuration.connectTimeout) ms")
            }
            if state == .connecting || state == .handshaking, now >= connectDeadline {
                throw .transport(
                    "cannot connect: timed out after \(client.configuration.connectTimeout) ms")
            }
            if state == .open {
                try flush()
                expire(now)
                try flush()
                if goingAway, inFlight == 0 {
                    close(failing: nil)
                } else if let session, nghttp2_session_want_read(session) == 0, nghttp2_session_want_write(session) == 0 {
                    close(failing: .transport("the HTTP/2 session ended"))
                }
            }
        } catch {
            close(failing: error)
        }
    }

    /// Reads what TLS has and feeds it to nghttp2 (whose callbacks take the answers).
    private func receive() throws(HTTP2Failure) {
        guard let ssl, let session else { return }
        readWantsWrite = false
        let buffer = client.readBuffer
        while true {
            ERR_clear_error()
            let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            if count > 0 {
                let taken = nghttp2_session_mem_recv(session, buffer.baseAddress, Int(count))
                if taken < 0 { throw .transport("HTTP/2: \(String(cString: nghttp2_strerror(Int32(taken))))") }
                // Less than the buffer, and nothing left in TLS's buffers (it reads ahead): the
                // socket is drained.
                if Int(count) < buffer.count, SSL_has_pending(ssl) == 0 { return }
                continue
            }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ:
                return
            case SSL_ERROR_WANT_WRITE:
                readWantsWrite = true
                return
            case SSL_ERROR_ZERO_RETURN:
                throw .transport("the server closed the connection")
            case SSL_ERROR_SYSCALL:
                let detail = HTTP2Client.sslError()
                throw .transport("the server closed the connection" + (detail.isEmpty ? "" : ": \(detail)"))
            default:
                throw .transport("TLS: \(HTTP2Client.sslError())")
            }
        }
    }

    /// Writes what nghttp2 has to send, in large TLS records, until TLS would block.
    func flush() throws(HTTP2Failure) {
        guard state == .open, let ssl, let session else { return }
        while true {
            if outputStart == output.count {
                output.removeAll(keepingCapacity: true)
                outputStart = 0
                while output.count < 1 << 16 {
                    var data: UnsafePointer<UInt8>?
                    let count = nghttp2_session_mem_send(session, &data)
                    if count < 0 { throw .transport("HTTP/2: \(String(cString: nghttp2_strerror(Int32(count))))") }
                    guard count > 0, let data else { break }
                    output.append(contentsOf: UnsafeBufferPointer(start: data, count: count))
                }
                if output.isEmpty { return }
            }
            ERR_clear_error()
            let written = output.withUnsafeBufferPointer { bytes in
                SSL_write(ssl, bytes.baseAddress! + outputStart, Int32(min(bytes.count - outputStart, Int(Int32.max))))
            }
            if written > 0 {
                outputStart += Int(written)
                continue
            }
            switch SSL_get_error(ssl, written) {
            case SSL_ERROR_WANT_WRITE, SSL_ERROR_WANT_READ: return
            default:
                let detail = HTTP2Client.sslError()
                throw .transport("cannot write to the server" + (detail.isEmpty ? "" : ": \(detail)"))
            }
        }
    }

    /// Ends every request past its deadline: its stream reset, the exchange failed.
    private func expire(_ now: Int) {
        while firstSent < sent.count, sent[firstSent].finished || sent[firstSent].deadline <= now {
            let exchange = sent[firstSent]
            firstSent += 1
            guard !exchange.finished else { continue }
            // The stream forgets the exchange (its reset's close callback finds nothing to end)
            // and is reset; a stream nghttp2 no longer knows is closed already.
            if let session, exchange.streamID > 0, nghttp2_session_set_stream_user_data(session, exchange.streamID, nil) == 0,
                nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), exchange.streamID, NGHTTP2_CANCEL.rawValue) != 0
            {
                // Out of memory: no new request goes on this connection.
                stopTaking()
            }
            end(exchange, .transport("no answer within \(client.configuration.requestTimeout / 1000) s"))
        }
        if firstSent > 256, firstSent * 2 > sent.count {
            sent.removeFirst(firstSent)
            firstSent = 0
        }
    }

    /// `exchange` is done: answered (`failure` nil) or failed.
    func end(_ exchange: HTTP2Exchange, _ failure: HTTP2Failure?) {
        guard !exchange.finished else { return }
        exchange.finished = true
        exchange.failure = failure
        inFlight -= 1
        client.finish(exchange)
    }

    /// No new request goes on this connection (nghttp2 takes no new stream): it ends once its
    /// requests are answered.
    func stopTaking() { goingAway = true }

    /// Ends the connection: every request not answered fails with `failure` (nil: there is none).
    func close(failing failure: HTTP2Failure?) {
        guard state != .closed else { return }
        state = .closed
        let reason = failure ?? .transport("the connection ended")
        for exchange in sent[firstSent...] where !exchange.finished { end(exchange, reason) }
        sent = []
        firstSent = 0
        release()
        client.ended(self)
    }

    /// Frees the connection's resources at the client's end, its requests left as they are.
    func discard() {
        state = .closed
        sent = []
        release()
    }

    private func release() {
        // A lookup under way goes on alone; its thread holds it until the name server answers.
        lookup = nil
        if let session {
            nghttp2_session_del(session)
            self.session = nil
        }
        if let ssl {
            SSL_free(ssl)
            self.ssl = nil
        }
        closeDescriptor()
    }

    // MARK: nghttp2's callbacks, through the client's callback table.

    /// The peer's SETTINGS (its stream limit), GOAWAY, and the end of an answer.
    func received(_ frame: nghttp2_frame_hd) {
        switch UInt32(frame.type) {
        case NGHTTP2_SETTINGS.rawValue where frame.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
            settingsReceived = true
            if let session {
                let peer = Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
                limit = max(1, min(peer, client.configuration.maximumStreams))
            }
        case NGHTTP2_GOAWAY.rawValue:
            goingAway = true
        case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
            if frame.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0, let exchange = exchange(frame.stream_id) {
                exchange.ended = true
            }
        default:
            break
        }
    }

    func exchange(_ stream: Int32) -> HTTP2Exchange? {
        guard let session, let context = nghttp2_session_get_stream_user_data(session, stream) else { return nil }
        return Unmanaged<HTTP2Exchange>.fromOpaque(context).takeUnretainedValue()
    }

    /// A stream closed: its exchange is answered if its answer ended, else failed.
    func closed(_ stream: Int32, code: UInt32) {
        guard state != .closed, let exchange = exchange(stream) else { return }
        if exchange.ended, exchange.status > 0 {
            end(exchange, nil)
        } else if code == NGHTTP2_REFUSED_STREAM.rawValue {
            end(exchange, .transport("the server did not process the request (GOAWAY, or a refused stream)"))
        } else {
            end(exchange, .transport("the stream was reset: \(String(cString: nghttp2_http2_strerror(code)))"))
        }
    }
}

/// The body of a request, from its exchange (`source.ptr`) to nghttp2's buffer.
private let readBody: nghttp2_data_source_read_callback = { _, _, buffer, length, flags, source, _ in
    guard let buffer, let flags, let context = source?.pointee.ptr else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    let exchange = Unmanaged<HTTP2Exchange>.fromOpaque(context).takeUnretainedValue()
    let count = min(length, exchange.requestBody.count - exchange.bodyOffset)
    exchange.requestBody.withUnsafeBufferPointer { body in
        (buffer).update(from: body.baseAddress! + exchange.bodyOffset, count: count)
    }
    exchange.bodyOffset += count
    if exchange.bodyOffset == exchange.requestBody.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
    return count
}
