internal import KindlyPushBase
internal import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushLibcrypto
internal import KindlyPushRedis
internal import KindlyPushSend
internal import KindlyPushWebPush

#if canImport(Glibc)
    import Glibc
#endif

/// `send`'s run: the gateway of the command line's one app or of `--config`'s apps, fed by
/// standard input and files (`--jsonl`) or a Redis consumer group (`--redis`).
extension SendCommand {
    package func run() -> Int32 {
        do throws(CodedError) {
            let configuration = try options.configPath.map { (path) throws(CodedError) in try SendConfiguration.load(path) }
            let gateway = try Self.gateway(options, configuration)
            if options.isCheck, let configuration {
                return Self.describe(configuration)
            }
            if options.redis?.metrics != nil || options.metrics != nil {
                let metrics = SendMetrics()
                for sender in gateway.senders { sender.metrics = metrics }
                if let address = options.metrics { try CommandMetrics.serve(address) { metrics.text() } }
            }
            if let redis = options.redis {
                return services.runWorker(SendWorkerCommand(gateway: gateway, deadLetters: redis.deadLetter != nil), options: redis)
            }
            return options.isLineMode ? runLines(gateway, options) : try runSingle(gateway, options)
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
    }

    /// The senders of the command line's one app, or of each app of the configuration (APNs with
    /// its provider token, Web Push with its VAPID key; every key file read and checked before
    /// anything is sent).
    static func gateway(_ options: SendOptions, _ configuration: SendConfiguration?) throws(CodedError) -> PushGateway {
        let clock = SendClock(file: options.clockFile)
        guard let configuration else {
            let destination = APNsDestination(
                serverURL: options.serverURL, topic: options.topic, caFile: options.caFile, expiration: options.expiration,
                connections: options.connections)
            let token = try providerToken(
                keyFile: options.keyFile, keyID: options.keyID, teamID: options.teamID, clock: clock, option: "--auth-key-file")
            return PushGateway(
                routes: [.init(name: nil, senders: [try PushSender(destination: destination, token: token)])], defaultRoute: 0,
                configPath: nil)
        }
        var routes: [PushGateway.Route] = []
        // One provider token per team and key, whichever apps use them.
        var tokens: [String: SharedProviderToken] = [:]
        for app in configuration.apps {
            var senders: [PushSender] = []
            /// A key file of the app, read and checked: its error names the app and the key.
            func keyFile<T>(_ key: String, _ read: () throws(PrivateFileError) -> T) throws(CodedError) -> T {
                do throws(PrivateFileError) {
                    return try read()
                } catch {
                    throw CodedError(.io, "app '\(app.name)': \(key): \(error)")
                }
            }
            if let webPush = app.webPush {
                let key = try keyFile("vapid_key_file") { () throws(PrivateFileError) in try VAPIDKeyFile.read(webPush.vapidKeyFile) }
                let destination = WebPushDestination(
                    app: app.name, vapidKey: key, subject: webPush.subject, reach: webPush.reach,
                    expiration: options.expiration, clock: clock)
                senders.append(PushSender(webPush: destination))
            }
            if let fcm = app.fcm {
                let account = try keyFile("service_account_file") { () throws(PrivateFileError) in
                    try FCMServiceAccount.read(fcm.serviceAccountFile)
                }
                let destination = FCMDestination(
                    app: app.name, account: account, serverURL: fcm.serverURL, caFile: fcm.caFile, connections: fcm.connections,
                    expiration: options.expiration, clock: clock)
                senders.append(try PushSender(fcm: destination))
            }
            guard let apns = app.apns else {
                routes.append(.init(name: app.name, senders: senders))
                continue
            }
            let destination = APNsDestination(
                serverURL: apns.serverURL, topic: apns.topic, caFile: apns.caFile, expiration: options.expiration,
                connections: apns.connections, app: app.name)
            let identity = "\(apns.teamID) \(apns.keyID) \(apns.keyFile)"
            let token: SharedProviderToken
            if let shared = tokens[identity] {
                token = shared
            } else {
                token = SharedProviderToken(
                    try providerToken(
                        keyFile: apns.keyFile, keyID: apns.keyID, teamID: apns.teamID, clock: clock, option: "app '\(app.name)': key_file"))
                tokens[identity] = token
            }
            senders.insert(try PushSender(destination: destination, token: token), at: 0)
            routes.append(.init(name: app.name, senders: senders))
        }
        let defaultRoute = configuration.app(named: nil).flatMap { app in routes.firstIndex { $0.name == app.name } }
        return PushGateway(routes: routes, defaultRoute: defaultRoute, configPath: configuration.path)
    }

    /// The auth key, read from its file (regular, the user's, mode 0600) into wiped memory, and
    /// the first provider token signed with it.
    static func providerToken(keyFile: String, keyID: String, teamID: String, clock: SendClock, option: String) throws(CodedError)
        -> ProviderToken
    {
        let pem: SecureBytes
        do throws(PrivateFileError) {
            pem = try PrivateFile.read(keyFile)
        } catch {
            throw CodedError(.io, "\(option): \(error)")
        }
        do throws(AuthKeyError) {
            let key = try ES256Key(pem: pem, path: keyFile)
            return try ProviderToken(key: key, keyID: keyID, teamID: teamID, clock: clock)
        } catch {
            throw CodedError(.io, error.description)
        }
    }

    /// `send --config FILE --check`: what the file says, app by app, with no secret (key files
    /// by path, read and checked already); the status of writing it (`io` when standard output
    /// fails, as every command's).
    static func describe(_ configuration: SendConfiguration) -> Int32 {
        var text = "\(configuration.path): \(configuration.apps.count) app\(configuration.apps.count == 1 ? "" : "s")"
        if let name = configuration.app(named: nil)?.name { text += ", default '\(name)'" }
        text += "\n"
        func trusting(_ caFile: String?) -> String { caFile.map { "trusting only \($0)" } ?? "trusting the system's authorities" }
        func connections(_ count: Int) -> String { "\(count) connection\(count == 1 ? "" : "s")" }
        for app in configuration.apps {
            if let apns = app.apns {
                text += "app '\(app.name)': apns \(apns.serverURL), topic \(apns.topic), team \(apns.teamID), key \(apns.keyID) "
                text += "(\(apns.keyFile): 0600, a P-256 key), \(connections(apns.connections)), \(trusting(apns.caFile))\n"
            }
            if let fcm = app.fcm {
                text += "app '\(app.name)': fcm \(fcm.serverURL), service account \(fcm.serviceAccountFile) (0600, an RSA key), "
                text += "\(connections(fcm.connections)), \(trusting(fcm.caFile))\n"
            }
            if let webPush = app.webPush {
                let reach = webPush.reach
                text += "app '\(app.name)': webpush, subject \(webPush.subject), VAPID key \(webPush.vapidKeyFile) (0600, a P-256 key), "
                text += "\(connections(reach.connections)) per push service, \(trusting(reach.caFile)); "
                text += "at most \(reach.maximumPushServices) push services at once, "
                text += reach.allowedOrigins.map { "only \($0.patterns.joined(separator: ", "))" } ?? "any origin"
                text += reach.allowsPrivateAddresses ? ", private addresses too" : ", global addresses only"
                text += "\n"
            }
        }
        text += "ok: every app's key file was read (and its provider token signed)\n"
        var stdout = OutputStream(descriptor: STDOUT_FILENO)
        stdout.write(Array(text.utf8))
        return Terminal.finish(&stdout)
    }

    /// One document: its result on standard output (exit 0 whatever APNs answered), or its
    /// error on standard error.
    private func runSingle(_ sender: PushGateway, _ options: SendOptions) throws(CodedError) -> Int32 {
        let descriptor = try InputFiles.open(options.inputs, lineMode: false)[0]
        defer { if descriptor != STDIN_FILENO { FileDescriptor(rawValue: descriptor).close() } }
        let input = try StandardInput.readDocument(descriptor: descriptor)
        // A bad document is refused before anything is sent, on standard error.
        let refusal = input.withUnsafeBytes { raw -> APNsPush.Refusal? in
            do throws(APNsPush.Refusal) {
                _ = try OutgoingPush(bytes: raw)
                return nil
            } catch {
                return error
            }
        }
        if let refusal { throw refusal.error }
        // The results file exists before anything is sent: a killed run's is never overwritten.
        let target = try OutputTarget(journalFor: options.outputPath)
        StopSignals.install()
        // Answered whatever comes: a stop signal does not end the push in flight.
        let processing = GatewayLines(sender, endsAfterStopDrain: false, keepsLines: true)
        var source = DocumentSource(document: input)
        var sink = ResultLine()
        if let error = LineEngine.drive(source: &source, processing: processing, sink: &sink) { throw error }
        guard let outcome = sink.outcome else { preconditionFailure("the drive ends once the document is answered") }
        // The one line: a result, or the error of a push that found no server (or named no app).
        if let code = outcome.error {
            target.discard()
            throw CodedError(code, outcome.message)
        }
        var stdout = OutputStream(descriptor: target.descriptor, capacity: sink.bytes.count)
        stdout.write(sink.bytes)
        return DocumentRunner.finish(&stdout, target) ?? 0
    }

    /// `--jsonl`: one result per line, in input order, each written once all before it are.
    private func runLines(_ sender: PushGateway, _ options: SendOptions) -> Int32 {
        let descriptors: [Int32]
        let target: OutputTarget
        do throws(CodedError) {
            descriptors = try InputFiles.open(options.inputs, lineMode: true)
            target = try OutputTarget(journalFor: options.outputPath)
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        defer { for descriptor in descriptors where descriptor != STDIN_FILENO { FileDescriptor(rawValue: descriptor).close() } }
        StopSignals.install()
        // Read once per batch, so that answers are written between reads; standard input is
        // waited for in the gateway's `poll`, beside its connections.
        let reader = ReaderSource(
            LineBatchReader(descriptors: descriptors, maximumLineLength: StandardInput.maximumDocumentSize), maximumReads: 1,
            readiness: descriptors.contains(STDIN_FILENO) ? STDIN_FILENO : nil)
        var source = SendLineSource(reader: reader)
        var sink = ResultSink(stdout: OutputStream(descriptor: target.descriptor))
        let readError = LineEngine.drive(source: &source, processing: GatewayLines(sender), sink: &sink)
        source.reader.wipe()
        var stdout = sink.stdout
        let writeStatus = DocumentRunner.finish(&stdout, target, incomplete: readError != nil)
        if readError == nil, let writeStatus { return writeStatus }
        if let readError {
            Diagnostics.report(readError)
            return readError.code.exitStatus
        }
        return 0
    }
}
