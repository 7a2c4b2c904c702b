internal import CHiredis
internal import COpenSSL
internal import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// A `rediss://` connection: a TCP socket, TLS from OpenSSL over it
/// (the server's certificate verified against `--ca-file` or the system's authorities, its
/// host name or IP address checked; a client certificate when given), and hiredis's protocol
/// reader fed with what TLS decrypts. Debian's hiredis (0.14) has no TLS of its own.
final class RedisTLSStream {
    private let descriptor: Int32
    private let context: OpaquePointer
    private let ssl: OpaquePointer
    let reader: UnsafeMutablePointer<redisReader>
    private var output: [UInt8] = []
    /// Whether the server has sent anything yet, and whether a client certificate was given: a
    /// server that wants one closes TLS 1.3 right after the handshake, before its first answer.
    private var hasReceived = false
    private let presentsCertificate: Bool
    /// How long a reply may take (milliseconds).
    private let commandTimeout: Int

    init(host: String, port: Int32, tls: RedisOptions.TLS, connectTimeout: Int, commandTimeout: Int) throws(RedisConnectionLost) {
        self.commandTimeout = commandTimeout
        let place = "\(host):\(port)"
        presentsCertificate = tls.certificateFile != nil
        let socket = try Self.connect(host: host, port: port, timeout: connectTimeout, place: place)
        var limit = timeval(tv_sec: commandTimeout / 1000, tv_usec: (commandTimeout % 1000) * 1000)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let (made, session): (OpaquePointer, OpaquePointer)
        do throws(RedisConnectionLost) {
            (made, session) = try Self.handshake(socket, host: host, tls: tls, place: place)
        } catch {
            FileDescriptor(rawValue: socket).close()
            throw error
        }
        guard let created = redisReaderCreate() else {
            SSL_free(session)
            SSL_CTX_free(made)
            FileDescriptor(rawValue: socket).close()
            throw RedisConnectionLost(reason: "out of memory")
        }
        descriptor = socket
        context = made
        ssl = session
        reader = created
    }

    /// The TLS context and session over `socket`, handshake done and the certificate verified.
    private static func handshake(_ socket: Int32, host: String, tls: RedisOptions.TLS, place: String) throws(RedisConnectionLost)
        -> (OpaquePointer, OpaquePointer)
    {
        guard let made = SSL_CTX_new(TLS_client_method()) else { throw RedisConnectionLost(reason: "TLS to \(place): \(sslError())") }
        func fail(_ what: String) -> RedisConnectionLost {
            let reason = RedisConnectionLost(reason: "TLS to \(place): \(what): \(sslError())")
            SSL_CTX_free(made)
            return reason
        }
        SSL_CTX_set_verify(made, SSL_VERIFY_PEER, nil)
        if let caFile = tls.caFile {
            guard SSL_CTX_load_verify_locations(made, caFile, nil) == 1 else { throw fail("cannot read the CA file '\(caFile)'") }
        } else {
            SSL_CTX_set_default_verify_paths(made)
        }
        if let certificate = tls.certificateFile, let key = tls.keyFile {
            guard SSL_CTX_use_certificate_chain_file(made, certificate) == 1 else {
                throw fail("cannot read the client certificate '\(certificate)'")
            }
            // A key with a pass phrase fails here instead of OpenSSL asking for it on the terminal
            // at every connection: no pass phrase is given.
            SSL_CTX_set_default_passwd_cb(made) { _, _, _, _ in 0 }
            guard SSL_CTX_use_PrivateKey_file(made, key, SSL_FILETYPE_PEM) == 1, SSL_CTX_check_private_key(made) == 1 else {
                throw fail("cannot read the client key '\(key)' (a key with a pass phrase is not taken), or it is not the certificate's")
            }
        }
        guard let session = SSL_new(made) else { throw fail("no session") }
        var address = in6_addr()
        if inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1 {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(session), host)
        } else {
            SSL_set1_host(session, host)
            // SSL_set_tlsext_host_name, a macro: the name the server chooses its certificate by.
            _ = host.withCString {
                SSL_ctrl(session, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: $0))
            }
        }
        SSL_set_fd(session, socket)
        guard SSL_connect(session) == 1 else {
            let verify = SSL_get_verify_result(session)
            let detail = verify == X509_V_OK ? sslError() : String(cString: X509_verify_cert_error_string(verify))
            SSL_free(session)
            SSL_CTX_free(made)
            throw RedisConnectionLost(reason: "TLS to \(place) failed: \(detail)")
        }
        return (made, session)
    }

    deinit {
        SSL_shutdown(ssl)
        SSL_free(ssl)
        SSL_CTX_free(context)
        FileDescriptor(rawValue: descriptor).close()
        redisReaderFree(reader)
        output.wipeCapacity()
    }

    private static func sslError() -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "\(Errno.current)" }
        var text = [UInt8](repeating: 0, count: 256)
        text.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { ERR_error_string_n(code, $0.baseAddress, $0.count) }
        }
        return String(decoding: text.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// A TCP connection to `host:port` within `timeout` ms (each address in turn).
    private static func connect(host: String, port: Int32, timeout: Int, place: String) throws(RedisConnectionLost) -> Int32 {
        do throws(TCPSocket.Failure) {
            return try TCPSocket.connect(host: host, port: Int(port), timeout: timeout)
        } catch {
            throw RedisConnectionLost(reason: "cannot connect to Redis at \(place): \(error)")
        }
    }

    /// Adds one command, in the protocol's form, to what ``flush()`` sends.
    func append(_ arguments: [[UInt8]]) throws(RedisConnectionLost) {
        output += Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments {
            output += Array("$\(argument.count)\r\n".utf8)
            output += argument
            output += [0x0D, 0x0A]
        }
    }

    /// Sends what ``append(_:)`` added (and wipes it: AUTH carries the password).
    func flush() throws(RedisConnectionLost) {
        defer { output.wipeCapacity() }
        var sent = 0
        while sent < output.count {
            let count = output[sent...].withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
            guard count > 0 else { throw RedisConnectionLost(reason: "TLS write failed: \(Self.sslError())") }
            sent += Int(count)
        }
        output.removeAll(keepingCapacity: false)
    }

    /// Reads what TLS has next into the reader; a lost connection or a timeout throws.
    func fill() throws(RedisConnectionLost) {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let count = SSL_read(ssl, &chunk, Int32(chunk.count))
        guard count > 0 else {
            if !hasReceived && !presentsCertificate {
                throw RedisConnectionLost(
                    reason: "TLS: the server closed the connection before its first answer"
                        + " (a server that asks for a client certificate does: give --tls-cert and --tls-key)")
            }
            // SO_RCVTIMEO ran out: the read failed with EAGAIN.
            if count < 0, Errno.current == .wouldBlock {
                throw RedisConnectionLost(reason: RedisConnection.noAnswer(within: commandTimeout))
            }
            throw RedisConnectionLost(reason: count == 0 ? "the server closed the connection" : "TLS read failed: \(Self.sslError())")
        }
        hasReceived = true
        _ = chunk.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { redisReaderFeed(reader, $0.baseAddress, Int(count)) }
        }
        chunk.wipeCapacity()
    }
}
