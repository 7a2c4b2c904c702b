internal import CNghttp2
internal import COpenSSL
internal import KindlyPushCore

#if canImport(Glibc)
    // `pollfd`: what ``HTTP2Client/prepare(timeout:into:)`` and ``HTTP2Client/perform(_:)`` share
    // with a caller that polls several clients at once.
    package import Glibc
#endif

/// Why an ``HTTP2Client`` cannot start (its TLS context, its CA file).
package struct HTTP2SetupError: Error, Sendable, CustomStringConvertible {
    package let description: String
}

/// An HTTP/2 client of one server over a pool of connections (``Configuration/connections``),
/// on nghttp2's memory interface and OpenSSL's TLS: ALPN `h2` required (a server that chooses
/// anything else is refused before anything is sent to it), the certificate verified against
/// ``Configuration/caFile`` only when given, else the system's authorities, the host name or IP
/// address checked.
///
/// One thread drives it: ``submit(_:headers:)`` hands a request to the least busy connection
/// that has room (in flight ÷ its peer's SETTINGS_MAX_CONCURRENT_STREAMS; one request before
/// the peer's SETTINGS came), opening one in a free place of the pool when every open one is
/// busy; ``wait(alsoWatching:timeout:)`` writes what is ready, waits in one `poll` over every
/// socket and a descriptor of the caller's, reads, and ends what timed out; the exchanges done
/// come back through ``takeFinished(into:)``. A connection that fails, is lost or went away
/// (GOAWAY) fails its unanswered requests (``HTTP2Failure/transport(_:)``) and frees its
/// place: the next request that needs it opens a new one.
package final class HTTP2Client {
    /// Where the client connects and its bounds.
    package struct Configuration: Sendable {
        /// The host name or IP address (an IPv6 address without brackets): resolved with
        /// getaddrinfo, and what the certificate must name.
        package var host: String
        package var port: Int
        /// `HOST[:PORT]` as the URL gives it: the requests' `:authority`, and messages.
        package var authority: String
        /// The PEM authorities that alone verify the server; nil: the system's.
        package var caFile: String?
        /// Connections at most.
        package var connections: Int
        /// The TCP connection and TLS handshake, and a whole request (milliseconds).
        package var connectTimeout: Int
        package var requestTimeout: Int
        /// Requests in flight on one connection at most, whatever its peer allows.
        package var maximumStreams: Int
        /// An answer's body kept, in bytes.
        package var maximumBodySize: Int
        /// The answer headers kept (lower-case names), in ``HTTP2Exchange/headers``.
        package var watchedHeaders: [String]
        /// Connect to global addresses only (``InternetAddress/isGlobal(_:)``): for a server
        /// that the input names, so that it cannot reach the host's loopback or private network.
        /// A host that resolves to none fails each request with ``HTTP2Failure/refusedAddress(_:)``.
        package var globalAddressesOnly: Bool

        package init(
            host: String, port: Int, authority: String, caFile: String?, connections: Int, connectTimeout: Int, requestTimeout: Int,
            maximumStreams: Int, maximumBodySize: Int, watchedHeaders: [String], globalAddressesOnly: Bool = false
        ) {
            self.host = host
            self.port = port
            self.authority = authority
            self.caFile = caFile
            self.connections = connections
            self.connectTimeout = connectTimeout
            self.requestTimeout = requestTimeout
            self.maximumStreams = maximumStreams
            self.maximumBodySize = maximumBodySize
            self.watchedHeaders = watchedHeaders
            self.globalAddressesOnly = globalAddressesOnly
        }

        /// The host and port of `https://HOST[:PORT]` (port 443 when none; an IPv6 address in
        /// brackets); nil for anything else.
        package static func hostAndPort(ofURL url: String) -> (host: String, port: Int, authority: String)? {
            guard url.utf8.starts(with: "https://".utf8) else { return nil }
            let authority = String(decoding: url.utf8.dropFirst(8), as: UTF8.self)
            var host = Substring(authority)
            var port = 443
            if host.first == "[" {
                guard let close = host.firstIndex(of: "]") else { return nil }
                let rest = host[host.index(after: close)...]
                if rest.first == ":" {
                    guard let number = Int(rest.dropFirst()) else { return nil }
                    port = number
                }
                host = host[host.index(after: host.startIndex)..<close]
            } else if let colon = host.firstIndex(of: ":") {
                guard let number = Int(host[host.index(after: colon)...]) else { return nil }
                port = number
                host = host[..<colon]
            }
            guard !host.isEmpty, (1...65535).contains(port) else { return nil }
            return (String(host), port, authority)
        }
    }

    /// Header fields of one request at most.
    static let maximumFields = 64

    package let configuration: Configuration
    let tlsContext: OpaquePointer
    let callbacks: OpaquePointer
    /// What TLS decrypts, before nghttp2 takes it: one buffer for every connection.
    let readBuffer: UnsafeMutableBufferPointer<UInt8>
    /// The nghttp2 form of a request's fields, filled for each request.
    private let fields: UnsafeMutablePointer<nghttp2_nv>
    let watched: [[UInt8]]
    /// The host is an IP address: the certificate must name that address (no SNI).
    let hostIsAddress: Bool
    /// The authorities could not be loaded: every connection fails so.
    let trustFailure: HTTP2Failure?
    /// The pool's places: a connection, or nil where none is open.
    private var places: [HTTP2Connection?]
    /// Exchanges done and not taken yet.
    var finished: [HTTP2Exchange] = []
    /// Requests submitted and not finished.
    package private(set) var inFlight = 0
    /// Connections opened so far.
    private var opened = 0
    private var descriptors: [pollfd] = []
    private var polled: [HTTP2Connection] = []

    package init(_ configuration: Configuration) throws(HTTP2SetupError) {
        self.configuration = configuration
        let context: OpaquePointer
        (context, trustFailure) = try Self.tlsContext(caFile: configuration.caFile)
        var table: OpaquePointer?
        guard nghttp2_session_callbacks_new(&table) == 0, let table else {
            SSL_CTX_free(context)
            throw HTTP2SetupError(description: "HTTP/2: out of memory")
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(table, onFrame)
        nghttp2_session_callbacks_set_on_header_callback(table, onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(table, onData)
        nghttp2_session_callbacks_set_on_stream_close_callback(table, onStreamClose)
        tlsContext = context
        callbacks = table
        readBuffer = .allocate(capacity: 1 << 18)
        fields = .allocate(capacity: Self.maximumFields)
        watched = configuration.watchedHeaders.map { Array($0.utf8) }
        var address = in6_addr()
        hostIsAddress =
            inet_pton(AF_INET, configuration.host, &address) == 1 || inet_pton(AF_INET6, configuration.host, &address) == 1
        places = Array(repeating: nil, count: max(1, configuration.connections))
    }

    /// A TLS client context: TLS 1.2 or later (HTTP/2's floor, RFC 9113 section 9.2), ALPN
    /// offering h2 alone, writes that may take part of a buffer that may move between attempts,
    /// and the peer verified against `caFile` alone when given (the system's authorities are
    /// then never loaded), else the system's. Authorities that cannot be read come back beside
    /// the context: they fail each connection (each request is a transport failure, as with a
    /// server that cannot be verified), not the client.
    private static func tlsContext(caFile: String?) throws(HTTP2SetupError) -> (OpaquePointer, HTTP2Failure?) {
        let protocols: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        let mode = Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER)
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw HTTP2SetupError(description: "TLS: \(sslError())") }
        guard SSL_CTX_ctrl(context, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil) == 1,
            SSL_CTX_set_alpn_protos(context, protocols, UInt32(protocols.count)) == 0,
            SSL_CTX_ctrl(context, SSL_CTRL_MODE, mode, nil) & mode == mode
        else {
            let error = HTTP2SetupError(description: "TLS: \(sslError())")
            SSL_CTX_free(context)
            throw error
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        // TLS reads what the socket has, many records at once, instead of each record's header
        // and then its body: half the reads. (It answers the previous setting.)
        _ = SSL_CTX_ctrl(context, SSL_CTRL_SET_READ_AHEAD, 1, nil)
        SSL_CTX_set_default_read_buffer_len(context, 1 << 17)
        let loaded = caFile.map { SSL_CTX_load_verify_locations(context, $0, nil) } ?? SSL_CTX_set_default_verify_paths(context)
        guard loaded == 1 else {
            let what = caFile.map { "cannot read the CA file '\($0)'" } ?? "cannot load the system's certificate authorities"
            return (context, .transport("\(what): \(sslError())"))
        }
        return (context, nil)
    }

    deinit {
        for case let connection? in places { connection.discard() }
        SSL_CTX_free(tlsContext)
        nghttp2_session_callbacks_del(callbacks)
        readBuffer.deallocate()
        fields.deallocate()
    }

    static func sslError() -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        ERR_clear_error()
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// What a connection resolves: the host, its port, and the rules for its addresses.
    struct Lookup: Sendable {
        let host: String
        let port: Int
        /// The host is an IP address: nothing is asked of a name server.
        let isAddress: Bool
        let globalAddressesOnly: Bool
    }

    var lookup: Lookup {
        Lookup(
            host: configuration.host, port: configuration.port, isAddress: hostIsAddress,
            globalAddressesOnly: configuration.globalAddressesOnly)
    }

    /// The server's addresses (getaddrinfo), as `sockaddr` bytes; only the global ones with
    /// ``Configuration/globalAddressesOnly``. It blocks while a name server answers: a
    /// connection asks it on a thread of its own (``HostLookup``) unless the host is an address.
    static func resolve(_ lookup: Lookup) throws(HTTP2Failure) -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG | (lookup.isAddress ? AI_NUMERICHOST : 0)
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(lookup.host, String(lookup.port), &hints, &found)
        guard status == 0, let first = found else {
            throw .transport("cannot resolve \(lookup.host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var addresses: [[UInt8]] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let item = next {
            next = item.pointee.ai_next
            if let address = item.pointee.ai_addr {
                addresses.append(Array(UnsafeRawBufferPointer(start: address, count: Int(item.pointee.ai_addrlen))))
            }
        }
        guard lookup.globalAddressesOnly else { return addresses }
        let global = addresses.filter(InternetAddress.isGlobal)
        if global.isEmpty, let first = addresses.first {
            throw .refusedAddress(
                "\(lookup.host) resolves to \(InternetAddress.text(first)), a loopback, private, link-local or reserved address")
        }
        return global
    }

    /// The least busy connection with room (in flight ÷ limit), or a new one in a free place
    /// when every open one is busy or full; nil when none can take a request now.
    private func connectionWithRoom() -> HTTP2Connection? {
        var best: HTTP2Connection?
        var free: Int?
        for index in places.indices {
            guard let connection = places[index] else {
                if free == nil { free = index }
                continue
            }
            guard connection.hasRoom else { continue }
            if let chosen = best {
                if connection.inFlight * chosen.limit < chosen.inFlight * connection.limit { best = connection }
            } else {
                best = connection
            }
        }
        if let best, best.inFlight == 0 || free == nil { return best }
        guard let free else { return nil }
        opened += 1
        let connection = HTTP2Connection(client: self, number: opened)
        places[free] = connection
        return connection
    }

    /// Whether ``submit(_:headers:)`` would take a request now.
    package var hasRoom: Bool {
        places.contains { $0 == nil || $0!.hasRoom }
    }

    /// Hands `exchange` over with `headers` (its body is the exchange's); false when no
    /// connection can take it now (``hasRoom``).
    package func submit(_ exchange: HTTP2Exchange, headers: HTTP2Headers) -> Bool {
        guard let connection = connectionWithRoom() else { return false }
        guard connection.submit(exchange, headers: headers, fields: fields) else {
            // nghttp2 takes no new stream on it (its stream ids ran out): it ends once answered.
            connection.stopTaking()
            return false
        }
        inFlight += 1
        return true
    }

    /// The exchanges answered or failed since the last call, in the order they ended.
    package func takeFinished(into exchanges: inout [HTTP2Exchange]) {
        exchanges.append(contentsOf: finished)
        finished.removeAll(keepingCapacity: true)
    }

    /// Whether an exchange is done and not taken yet.
    package var hasFinished: Bool { !finished.isEmpty }

    /// Writes what every connection has to send, waits up to `timeout` milliseconds (less when
    /// a deadline comes sooner, none when an exchange is done) in one `poll` over every socket
    /// and `input` (-1: none), then reads, goes on with the handshakes and ends what timed out.
    /// Whether `input` became readable (or hung up).
    package func wait(alsoWatching input: Int32, timeout: Int) -> Bool {
        descriptors.removeAll(keepingCapacity: true)
        let wait = prepare(timeout: timeout, into: &descriptors)
        let watched = descriptors.count
        if input >= 0 { descriptors.append(pollfd(fd: input, events: Int16(POLLIN), revents: 0)) }
        let ready = Self.poll(&descriptors, timeout: wait)
        perform(descriptors[0..<watched])
        return ready && input >= 0 && descriptors[descriptors.count - 1].revents != 0
    }

    /// The first half of ``wait(alsoWatching:timeout:)``, for a caller that polls the sockets of
    /// several clients (and its own) at once: writes what every connection has to send, appends
    /// each socket to `descriptors` with the events it waits for, and says how long the `poll`
    /// may wait (at most `timeout` milliseconds). ``perform(_:)`` takes what it saw.
    package func prepare(timeout: Int, into descriptors: inout [pollfd]) -> Int {
        let now = MonotonicClock.milliseconds()
        var wait = finished.isEmpty ? timeout : 0
        polled.removeAll(keepingCapacity: true)
        for case let connection? in places {
            connection.proceed(0, now: now)
            guard connection.state != .closed, let events = connection.pollEvents else { continue }
            if let deadline = connection.nextDeadline() { wait = min(wait, deadline - now) }
            descriptors.append(pollfd(fd: connection.socket, events: events, revents: 0))
            polled.append(connection)
        }
        if !finished.isEmpty { wait = 0 }
        return max(0, wait)
    }

    /// The second half: reads what `poll` saw of the descriptors ``prepare(timeout:into:)``
    /// appended (in their order), goes on with the handshakes and ends what timed out.
    package func perform(_ descriptors: ArraySlice<pollfd>) {
        let now = MonotonicClock.milliseconds()
        for (connection, descriptor) in zip(polled, descriptors) { connection.proceed(descriptor.revents, now: now) }
        polled.removeAll(keepingCapacity: true)
    }

    /// `poll` over `descriptors` for up to `timeout` milliseconds: whether any is ready. A signal
    /// (SIGTERM) ends the wait with nothing ready: the caller looks at it.
    package static func poll(_ descriptors: inout [pollfd], timeout: Int) -> Bool {
        do throws(Errno) {
            return try valueOrErrno(retryOnInterrupt: false) { Glibc.poll(&descriptors, nfds_t(descriptors.count), Int32(timeout)) } > 0
        } catch {
            for index in descriptors.indices { descriptors[index].revents = 0 }
            return false
        }
    }

    /// Ends every connection: each request not answered fails with `reason`.
    package func closeAll(_ reason: String) {
        for case let connection? in places { connection.close(failing: .transport(reason)) }
    }

    /// A connection ended: its place is free.
    func ended(_ connection: HTTP2Connection) {
        if let index = places.firstIndex(where: { $0 === connection }) { places[index] = nil }
    }

    /// An exchange of a connection ended.
    func finish(_ exchange: HTTP2Exchange) {
        inFlight -= 1
        finished.append(exchange)
    }

    /// The answer's `:status` and the watched headers.
    func header(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, of exchange: HTTP2Exchange) {
        if name.count == 7, name[0] == UInt8(ascii: ":"), name.elementsEqual(":status".utf8) {
            var status = 0
            for digit in value {
                guard (0x30...0x39).contains(digit) else { return }
                status = status * 10 + Int(digit - 0x30)
            }
            if status >= 200 { exchange.status = status }
            return
        }
        for (index, watched) in watched.enumerated() where watched.count == name.count && watched.elementsEqual(name) {
            exchange.headers.append((index, Array(value)))
        }
    }

    /// A chunk of an answer's body, kept up to ``Configuration/maximumBodySize``.
    func data(_ chunk: UnsafeBufferPointer<UInt8>, of exchange: HTTP2Exchange) {
        if exchange.body.count + chunk.count <= configuration.maximumBodySize { exchange.body.append(contentsOf: chunk) }
    }
}

private func connection(_ context: UnsafeMutableRawPointer) -> HTTP2Connection {
    Unmanaged<HTTP2Connection>.fromOpaque(context).takeUnretainedValue()
}

private let onFrame: nghttp2_on_frame_recv_callback = { _, frame, context in
    guard let frame, let context else { return 0 }
    connection(context).received(frame.pointee.hd)
    return 0
}

private let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, context in
    guard let frame, let name, let value, let context, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
    let owner = connection(context)
    guard let exchange = owner.exchange(frame.pointee.hd.stream_id) else { return 0 }
    owner.client.header(
        UnsafeBufferPointer(start: name, count: nameLength), UnsafeBufferPointer(start: value, count: valueLength), of: exchange)
    return 0
}

private let onData: nghttp2_on_data_chunk_recv_callback = { _, _, stream, data, length, context in
    guard let data, let context else { return 0 }
    let owner = connection(context)
    guard let exchange = owner.exchange(stream) else { return 0 }
    owner.client.data(UnsafeBufferPointer(start: data, count: length), of: exchange)
    return 0
}

private let onStreamClose: nghttp2_on_stream_close_callback = { _, stream, code, context in
    guard let context else { return 0 }
    connection(context).closed(stream, code: code)
    return 0
}
