internal import KindlyPushAPNs
internal import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushRedis

#if canImport(Glibc)
    import Glibc
#endif

extension CommandTable {
    /// `kindly-push-send`'s: `kindly-push`'s with `send` run here, on nghttp2, OpenSSL and libcrypto, and
    /// `--redis` workers on `workers` (hiredis); the Secret Service, `notify` and `doctor` still
    /// run in `kindly-push-desktop`.
    package static func send(workers: any RedisServices) -> CommandTable {
        kindlyPush.linking(
            .send, services: Services(redis: workers, send: APNsSendServices(workers: workers)), running: [.runs(SendCommand.self)],
            handOffs: [.desktopKeyring])
    }
}

/// The services of `kindly-push-send`: `send` on nghttp2, OpenSSL and libcrypto.
package struct APNsSendServices: SendServices {
    /// What runs `send --redis` as a worker.
    let workers: any RedisServices

    package init(workers: any RedisServices) { self.workers = workers }

    package func send(_ options: SendOptions) -> Int32 {
        do throws(CodedError) {
            let token = try Self.providerToken(options)
            let sender = try APNsSender(destination: Self.destination(options), token: token)
            if options.redis?.metrics != nil || options.metrics != nil {
                let metrics = SendMetrics()
                sender.metrics = metrics
                if let address = options.metrics { try CommandMetrics.serve(address) { metrics.text() } }
            }
            if let redis = options.redis {
                return workers.runWorker(SendWorkerCommand(sender: sender, deadLetters: redis.deadLetter != nil), options: redis)
            }
            return options.isLineMode ? runLines(sender, options) : try runSingle(sender, options)
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
    }

    /// Where the sender sends: the options' server, topic, CA file, expiration and connections.
    static func destination(_ options: SendOptions) -> APNsDestination {
        APNsDestination(
            serverURL: options.serverURL, topic: options.topic, caFile: options.caFile, expiration: options.expiration,
            connections: options.connections)
    }

    /// The auth key, read from its file (regular, the user's, mode 0600) into wiped memory, and
    /// the first provider token signed with it.
    static func providerToken(_ options: SendOptions) throws(CodedError) -> ProviderToken {
        let pem: SecureBytes
        do throws(PrivateFileError) {
            pem = try PrivateFile.read(options.keyFile)
        } catch {
            throw CodedError(.io, "--auth-key-file: \(error)")
        }
        do throws(AuthKeyError) {
            let key = try ES256Key(pem: pem, path: options.keyFile)
            return try ProviderToken(key: key, keyID: options.keyID, teamID: options.teamID, clock: SendClock(file: options.clockFile))
        } catch {
            throw CodedError(.io, error.description)
        }
    }

    /// One document: its result on standard output (exit 0 whatever APNs answered), or its
    /// error on standard error.
    private func runSingle(_ sender: APNsSender, _ options: SendOptions) throws(CodedError) -> Int32 {
        let descriptor = try InputFiles.open(options.inputs, lineMode: false)[0]
        defer { if descriptor != STDIN_FILENO { close(descriptor) } }
        let input = try StandardInput.readDocument(descriptor: descriptor)
        // A bad document is refused before anything is sent, on standard error.
        let refusal = input.withUnsafeBytes { raw -> APNsPush.Refusal? in
            do throws(APNsPush.Refusal) {
                _ = try APNsPush(bytes: raw)
                return nil
            } catch {
                return error
            }
        }
        if let refusal { throw refusal.error }
        // The results file exists before anything is sent: a killed run's is never overwritten.
        let target = try OutputTarget(journalFor: options.outputPath)
        StopSignals.install()
        input.withUnsafeBytes { sender.submit($0) }
        var output: [UInt8] = []
        while true {
            sender.takeWritable(into: &output)
            if sender.isIdle { break }
            _ = sender.step(waitingFor: -1, timeout: 200)
        }
        // The one line: a result, or the io error of a push that found no server.
        if let error = Self.errorOf(output) {
            target.discard()
            throw error
        }
        var stdout = OutputStream(descriptor: target.descriptor, capacity: output.count)
        stdout.write(output)
        return DocumentRunner.finish(&stdout, target) ?? 0
    }

    /// The error object of a single document's line, as the error it reports.
    private static func errorOf(_ line: [UInt8]) -> CodedError? {
        guard let object = (try? JSONReader.parse(Array(line.dropLast())))?.objectValue, let error = object["error"]?.objectValue,
            let message = error["message"]?.stringValue
        else { return nil }
        return CodedError(error["code"]?.stringValue == "bad_input" ? .badInput : .io, message)
    }

    /// `--jsonl`: one result per line, in input order, each written once all before it are.
    private func runLines(_ sender: APNsSender, _ options: SendOptions) -> Int32 {
        let descriptors: [Int32]
        let target: OutputTarget
        do throws(CodedError) {
            descriptors = try InputFiles.open(options.inputs, lineMode: true)
            target = try OutputTarget(journalFor: options.outputPath)
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        defer { for descriptor in descriptors where descriptor != STDIN_FILENO { close(descriptor) } }
        StopSignals.install()
        var reader = LineBatchReader(descriptors: descriptors, maximumLineLength: StandardInput.maximumDocumentSize)
        var stdout = OutputStream(descriptor: target.descriptor)
        var batch = LineBatchReader.Batch()
        var output: [UInt8] = []
        /// When the results in `output` began to gather (monotonic milliseconds).
        var gatheredSince: Int?
        var readError: CodedError?
        var inputEnded = false
        while true {
            if StopSignals.requested { inputEnded = true }
            sender.endAfterStopDrain()
            // Read what there is while there is room: never wait for input with answers to write.
            while !inputEnded, sender.hasRoom, !reader.inputWouldBlock() {
                do throws(Errno) {
                    try reader.nextBatch(into: &batch, maximumLines: 256, maximumReads: 1, live: true)
                } catch {
                    readError = CodedError(.io, "cannot read standard input: \(error)")
                    inputEnded = true
                    break
                }
                for line in batch.lines { sender.submit(line, in: batch.bytes) }
                if reader.isAtEnd { inputEnded = true }
                if batch.lines.isEmpty { break }
            }
            sender.takeWritable(into: &output)
            // Results answered one at a time are gathered for up to SendTiming.resultGathering
            // ms and written at once; all of them once nothing is left to answer.
            let now = MonotonicClock.milliseconds()
            if !output.isEmpty, gatheredSince == nil { gatheredSince = now }
            if let since = gatheredSince,
                now - since >= SendTiming.resultGathering || output.count >= 1 << 16 || StopSignals.requested || sender.isIdle
            {
                stdout.write(output)
                output.removeAll(keepingCapacity: true)
                gatheredSince = nil
                if !stdout.flush() { break }
            }
            if inputEnded, sender.isIdle { break }
            let waitsForInput = !inputEnded && sender.hasRoom && descriptors.contains(STDIN_FILENO)
            var timeout = sender.hasWork ? 200 : (waitsForInput ? 200 : 0)
            if let since = gatheredSince { timeout = min(timeout, max(0, since + SendTiming.resultGathering - now)) }
            _ = sender.step(waitingFor: waitsForInput ? STDIN_FILENO : -1, timeout: timeout)
        }
        reader.wipe()
        let writeStatus = DocumentRunner.finish(&stdout, target, incomplete: readError != nil)
        if readError == nil, let writeStatus { return writeStatus }
        if let readError {
            Diagnostics.report(readError)
            return readError.code.exitStatus
        }
        return 0
    }
}
