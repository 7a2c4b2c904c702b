internal import KindlyPushBase
package import KindlyPushCore
internal import KindlyPushHTTP2

#if canImport(Glibc)
    import Glibc
#endif

/// The apps one `send` serves, each with a sender per platform it has (APNs: its server, topic,
/// provider token and connections; Web Push: its VAPID key and a pool per push service), behind
/// one input and one output: each document goes to its app's sender (its `"app"`, else the
/// default app) of the platform its shape names (`"token"`, `"subscription"`), and the results
/// come out in input order whichever app or platform answered first. One thread drives every
/// sender with one `poll`.
package final class PushGateway {
    /// An app and its senders, one per platform.
    package struct Route {
        /// The app's name in `--config`; `nil` for the one app of the command line.
        package var name: String?
        package var senders: [PushSender]

        package init(name: String?, senders: [PushSender]) {
            self.name = name
            self.senders = senders
        }
    }

    private let routes: [Route]
    /// Every sender of every app, and each route's senders' places in it.
    package let senders: [PushSender]
    private let places: [[Int]]
    /// The route of a document with no `"app"`.
    private let defaultRoute: Int?
    /// The configuration file, for the message of a line naming no app of it (`nil`: the one app
    /// of the command line).
    private let configPath: String?
    /// For each input not taken yet, in input order: its sender, or `nil` when the gateway
    /// answered it itself (its line is the next of `ownLines`).
    private var order: [Int?] = []
    private var head = 0
    private var ownLines: [(line: [UInt8], error: CodedError)] = []
    private var ownHead = 0
    /// ``step(waitingFor:timeout:)``'s `poll` set, and where each sender's part ends in it.
    private var descriptors: [pollfd] = []
    private var ends: [Int] = []

    package init(routes: [Route], defaultRoute: Int?, configPath: String?) {
        precondition(!routes.isEmpty)
        self.routes = routes
        var senders: [PushSender] = []
        var places: [[Int]] = []
        for route in routes {
            places.append(route.senders.indices.map { senders.count + $0 })
            senders += route.senders
        }
        self.senders = senders
        self.places = places
        self.defaultRoute = defaultRoute
        self.configPath = configPath
    }

    /// Whether another input may be read now.
    package var hasRoom: Bool { order.count - head < SendTiming.readAhead }

    /// Whether every input read has its result written.
    package var isIdle: Bool { order.count == head }

    /// Whether a sender has something to send or to wait for.
    package var hasWork: Bool { senders.contains { $0.hasWork } }

    /// Takes one input document (a worker's entry, the one document of a single run).
    package func submit(_ bytes: UnsafeRawBufferPointer) {
        do throws(APNsPush.Refusal) {
            route(try OutgoingPush(bytes: bytes))
        } catch {
            refuse(error)
        }
    }

    /// Takes one input line of `--jsonl` through the line engine's per-line step
    /// (`LineEngine.run`): a line over the limit, one that is not JSON, and one that opens a
    /// document its newline cuts short get the engine's error, as in every other stream; a
    /// document that is no push, its refusal (with its id and device when it has them).
    package func submit(_ line: LineBatchReader.Line, in bytes: [UInt8]) {
        let read = LineEngine.run(line, in: bytes, limit: WireFormat.maximumInputSize, lines: true) {
            raw throws(CodedError) -> Result<OutgoingPush, APNsPush.Refusal> in
            do throws(APNsPush.Refusal) {
                return .success(try OutgoingPush(bytes: raw))
            } catch {
                // Not a JSON object: the line's reading failed, which is the engine's to say.
                if error.isUnreadable { throw error.error }
                return .failure(error)
            }
        }
        switch read {
        case .success(.success(let push)): route(push)
        case .success(.failure(let refusal)): refuse(refusal)
        case .failure(let error): refuse(APNsPush.Refusal(token: nil, error: error))
        }
    }

    /// Answers a refused document with its error line (nothing is sent).
    private func refuse(_ refusal: APNsPush.Refusal) {
        order.append(nil)
        ownLines.append((PushSender.errorLine(id: refusal.id, target: refusal.target, refusal.error), refusal.error))
    }

    /// Hands a push to its app's sender of its platform; a push naming no app of the
    /// configuration, or an app without that platform, is that line's `usage` error (nothing is
    /// sent).
    private func route(_ push: OutgoingPush) {
        let index: Int?
        if let name = push.delivery.app {
            index = routes.firstIndex { $0.name == name }
        } else {
            index = defaultRoute
        }
        guard let index else {
            refuse(push, CodedError(.usage, unknownApp(push.delivery.app)))
            return
        }
        guard let place = places[index].first(where: { senders[$0].platform == push.platform }) else {
            refuse(push, CodedError(.usage, noPlatform(push.platform, app: routes[index].name)))
            return
        }
        order.append(place)
        senders[place].submit(push)
    }

    private func refuse(_ push: OutgoingPush, _ error: CodedError) {
        order.append(nil)
        let target = [JSONObject.Member(key: "platform", value: .string(push.platform.rawValue))] + push.target
        ownLines.append((PushSender.errorLine(id: push.id, target: target, error), error))
    }

    private func noPlatform(_ platform: SendPlatform, app: String?) -> String {
        let section = platform.section
        guard let configPath, let app else {
            return
                "a \(section) line needs send --config with an app that has a '\(section)' section; this send has the one APNs app of its options"
        }
        return "app '\(app)' of \(configPath) has no '\(section)' section"
    }

    private func unknownApp(_ name: String?) -> String {
        guard let configPath else {
            return "\"app\" names an app of send --config, and this send has the one app of its options"
        }
        guard let name else { return "no \"app\", and \(configPath) names no default_app" }
        return "no app '\(name)' in \(configPath)"
    }

    /// The result lines answered in input order since the last call.
    package func takeWritable(into output: inout [UInt8]) {
        while takeOne(into: &output) != nil {}
    }

    /// Appends the result line (and a newline) of the oldest input whose result is not taken
    /// yet, when it is answered, and says what became of it; `nil` while it is not answered.
    package func takeOne(into output: inout [UInt8]) -> SendOutcome? {
        guard head < order.count else { return nil }
        let outcome: SendOutcome
        if let index = order[head] {
            guard let taken = senders[index].takeOne(into: &output) else { return nil }
            outcome = taken
        } else {
            output += ownLines[ownHead].line
            output.append(0x0A)
            outcome = .failed(ownLines[ownHead].error)
            ownHead += 1
        }
        head += 1
        if head >= 1024, head * 2 >= order.count {
            order.removeFirst(head)
            head = 0
        }
        if ownHead >= 64, ownHead * 2 >= ownLines.count {
            ownLines.removeFirst(ownHead)
            ownHead = 0
        }
        return outcome
    }

    /// Hands requests over, lets each sender work, and takes the answers; waits up to `timeout`
    /// milliseconds for a connection or for `input` (a descriptor to read, -1 for none), in
    /// one `poll`. Whether `input` is ready.
    package func step(waitingFor input: Int32, timeout: Int) -> Bool {
        descriptors.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
        var wait = timeout
        for sender in senders {
            wait = min(wait, sender.prepare(timeout: timeout, into: &descriptors))
            ends.append(descriptors.count)
            // An answer already taken in waits to be written: no waiting then.
            if sender.hasAnswer { wait = 0 }
        }
        if input >= 0 { descriptors.append(pollfd(fd: input, events: Int16(POLLIN), revents: 0)) }
        let ready = HTTP2Client.poll(&descriptors, timeout: max(0, wait))
        var start = 0
        for (sender, end) in zip(senders, ends) {
            sender.perform(descriptors[start..<end])
            start = end
        }
        return ready && input >= 0 && descriptors[descriptors.count - 1].revents != 0
    }

    /// After SIGTERM, what is in flight has ``SendTiming/stopDrain`` to be answered
    /// (``PushSender/endAfterStopDrain()``), in every sender.
    package func endAfterStopDrain() {
        for sender in senders { sender.endAfterStopDrain() }
    }

    /// `nil` when every app's push service answers (``PushSender/probe()``); else why not.
    package func probe() -> String? {
        for (route, places) in zip(routes, places) {
            for place in places {
                if let problem = senders[place].probe() { return route.name.map { "app '\($0)': \(problem)" } ?? problem }
            }
        }
        return nil
    }
}
