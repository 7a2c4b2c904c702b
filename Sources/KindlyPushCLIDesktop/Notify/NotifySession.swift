internal import KindlyPushBase
internal import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushDesktop

#if canImport(Glibc)
    import Glibc
#endif

/// One run of `notify`: the library's handler (the rules, the app state, taps) plugged into the
/// desktop presenter with its store; the bus connection to the notification server (made when a
/// push first needs it, and again after it broke); with `--follow`, the agent's D-Bus service;
/// the `--on-open` children, and standard output.
final class NotifySession {
    let command: NotifyCommand
    let handler: KindlyNotificationHandler
    let presenter: DesktopPresenter
    /// With `--follow`: `ai.kindly.Push1` on the session bus.
    let service: AgentService?
    /// With `--follow`: `org.unifiedpush.Connector2` as `ai.kindly.Push` (nil when the bus refused it).
    let connector: UnifiedPushConnector?
    /// What the handler's `openChat` reaches: the service, once it exists.
    let opened: Locked<AgentService?>
    var notifier: DesktopNotifier?
    var children: [pid_t] = []
    var stdout = OutputStream(descriptor: STDOUT_FILENO, capacity: 4096)
    var lastPurge: Int64 = 0
    /// The state store, when it is SQLite's: it keeps a followed FILE's position too.
    let positions: SQLiteDeduplicator?
    /// Pushes that wait for the notification server, oldest first, their bytes, and when to try.
    var kept: [[UInt8]] = []
    var keptBytes = 0
    var nextTry = ContinuousClock.now
    /// With `--follow`: the pipe a SIGTERM or SIGINT writes a byte to; -1 otherwise.
    var signals: Int32 = -1
    /// The key of a followed FILE's position in the store (``followedFileKey()``).
    var followKey: String?
    /// The number of the last line read, for its error line.
    var lineNumber = 0
    /// Set when the run ends before its input does: a signal, standard output failed, or the
    /// wait failed (``waitFailure``).
    var stopping = false
    /// Why the wait failed, reported at the end as the input's failure.
    var waitFailure: CodedError?

    init(command: NotifyCommand) throws(CodedError) {
        self.command = command
        let opened = Locked<AgentService?>(nil)
        self.opened = opened
        // A tap replayed after the host's Started() (or one made while it is active) opens its
        // chat in the running host: the Opened signal says which.
        handler = KindlyNotificationHandler(
            decryption: command.decryption, hasExtension: true, logger: .standardError(minimum: .warning),
            openChat: { chat in
                if opened.withLock({ $0 })?.emitOpened(chat) == false, command.verbose {
                    Diagnostics.line("kindly-push: notify: the Opened signal could not be sent")
                }
            })
        handler.setAppState(command.context.appState, chatOnScreen: command.context.screen == .chat ? command.context.chatOnScreen : nil)
        if command.context.screen == .chat, command.context.chatOnScreen == nil { handler.screen = .chat }
        if case .answer(let answer) = command.context.delegate, answer == .suppress {
            handler.delegate = ClosureNotificationDelegate { _ in false }
        }
        // The store, or an in-memory one with one line on standard error: never a lost banner.
        let store: any Deduplicator
        var positions: SQLiteDeduplicator?
        do throws(DeduplicationError) {
            let sqlite = try SQLiteDeduplicator(path: try command.statePath.get())
            positions = sqlite
            // For the tests: a SIGKILL at an exact point of the Nth claim ("after-claim:N",
            // "after-post:N"), the two windows of a kill while the server has the request.
            if let kill = command.environment["KINDLY_PUSH_TEST_KILL"].flatMap(SQLiteDeduplicator.KillPoint.init(_:)) {
                sqlite.killPoint = kill
            }
            store = sqlite
        } catch {
            NotifySession.warnAboutStore(error)
            store = InMemoryDeduplicator()
        }
        self.positions = positions
        presenter = DesktopPresenter(
            handler: handler, store: store, options: command.options, storeFailed: { NotifySession.warnAboutStore($0) })
        if command.follow != nil {
            do throws(AgentService.Failure) {
                let service = try AgentService()
                self.service = service
                opened.withLock { $0 = service }
            } catch {
                throw CodedError(.io, error.description)
            }
            connector = NotifySession.makeConnector(command.environment)
        } else {
            service = nil
            connector = nil
        }
    }

    static func warnAboutStore(_ error: DeduplicationError) {
        Diagnostics.line("kindly-push: warning: \(error); this run goes on without it and remembers nothing for the next one")
    }

    static func now() -> Int64 { Int64(time(nil)) }

    /// Forgets what is older than `--dedup-ttl`, at start and then at most once an hour.
    func purgeIfDue() {
        let now = NotifySession.now()
        guard now - lastPurge >= 3600 else { return }
        lastPurge = now
        presenter.purge(before: now - command.retention)
    }

    /// Connects to the notification server up front, so that clicks are heard from the first
    /// banner on; a server that is not there yet is tried again for each push.
    func connectIfAbsent() {
        do throws(CodedError) {
            notifier = try connectedNotifier()
        } catch {
            // Not there yet: each push tries again (and says why when it fails then).
        }
    }

    /// The bus connection, made now when there is none.
    func connectedNotifier() throws(CodedError) -> DesktopNotifier {
        if let notifier { return notifier }
        do throws(DesktopNotifierError) {
            let fresh = try DesktopNotifier(timeout: command.environment.notificationServerBudget(default: DesktopNotifier.defaultTimeout))
            notifier = fresh
            return fresh
        } catch {
            throw CodedError(.io, error.description)
        }
    }

    /// Shows one push: `line` of `bytes` (with `lines: false`, a whole document) through the
    /// line engine (``NotifyDecision``), then what it decided on the bus and in the store. Throws
    /// the line's error (`bad_input`; `not_kindly` without --passthrough) or `io` (no server).
    func present(_ line: LineBatchReader.Line, in bytes: [UInt8], lines: Bool) throws(CodedError) {
        try show(LineEngine.decide(line, in: bytes, processor: NotifyDecision(presenter: presenter), lines: lines).get())
    }

    /// Acts on what the line engine decided for one push: posts it on the bus and records it in
    /// the store, or says what became of it. Throws `io` when the server does not answer.
    func show(_ plan: DesktopPresenter.Plan) throws(CodedError) {
        if let outcome = plan.outcomeWithoutNotifier {
            report(outcome, plan: plan)
            return
        }
        let notifier = try connectedNotifier()
        do throws(DesktopNotifierError) {
            report(try presenter.show(plan, with: notifier, at: NotifySession.now()), plan: plan)
        } catch {
            // A broken or stalled connection is made afresh for the next push.
            self.notifier = nil
            throw CodedError(.io, error.description)
        }
    }

    /// With `--verbose`, what became of a push, on standard error (never its text). Without it,
    /// a push shown as its placeholder still gets its line, with its reason: the journal says
    /// which pushes could not be shown (a locked collection, a missing key), one line each.
    func report(_ outcome: DesktopPresenter.Outcome, plan: DesktopPresenter.Plan) {
        let reason = plan.decision.reason.map { " (\($0.code))" } ?? ""
        guard command.verbose else {
            if case .shown(let id, .placeholder) = outcome {
                Diagnostics.line("kindly-push: notify: placeholder shown as notification \(id)\(reason): the push could not be decrypted")
            }
            return
        }
        switch outcome {
        case .shown(let id, let presentation):
            Diagnostics.line("kindly-push: notify: \(presentation.rawValue) shown as notification \(id)\(reason)")
        case .duplicate:
            Diagnostics.line("kindly-push: notify: already shown; not shown again")
        case .nothing:
            Diagnostics.line("kindly-push: notify: nothing to show (\(plan.decision.presentation.rawValue))\(reason)")
        case .notKindly:
            break
        }
    }

    // MARK: The host's calls

    /// Applies what hosts asked over D-Bus since the last time: before each push, so that a push
    /// read after a host's call returned is decided in the state it set.
    func applyHostCalls() {
        guard let service else { return }
        for call in service.takeCalls() {
            switch call {
            case .setAppState(let state, let chat):
                handler.setAppState(state, chatOnScreen: chat)
                if command.verbose {
                    Diagnostics.line("kindly-push: notify: app state \(state.rawValue)\(chat == nil ? "" : " on a chat")")
                }
            case .started:
                handler.start()
                if command.verbose { Diagnostics.line("kindly-push: notify: the host started") }
            }
        }
    }

    // MARK: Taps

    /// Handles the server's events: a click on a banner or a placeholder opens the app (on its
    /// chat, for a banner). Returns how many taps opened something, or nil when standard output
    /// failed.
    func handleEvents() -> Int? {
        guard let notifier else { return 0 }
        var opened = 0
        for event in notifier.takeEvents() {
            guard let tap = presenter.tap(for: event) else { continue }
            switch presenter.handle(tap) {
            case .notKindly:
                continue
            case .opened(let chat):
                // The handler opened the chat in the running host (Opened); --on-open as well.
                guard open(chat, signal: false) else { return nil }
            case .openApp(let chat):
                guard open(chat, signal: true) else { return nil }
            }
            opened += 1
        }
        return opened
    }

    /// Opens the app on `chat` (none for a placeholder): the Opened signal when `signal`, and
    /// `--on-open` with `KINDLY_CHAT_ID` (unset without a chat), or the event line on standard
    /// output when neither `--on-open` nor the service is there. False when standard output failed.
    func open(_ chat: String?, signal: Bool) -> Bool {
        if signal, let service, !service.emitOpened(chat), self.command.verbose {
            Diagnostics.line("kindly-push: notify: the Opened signal could not be sent")
        }
        guard let command = command.onOpen else {
            guard service == nil else { return true }
            let line: JSONValue = chat.map { ["event": "opened", "chat_id": .string($0)] } ?? ["event": "opened"]
            stdout.write(JSONWriter.compactBytes(line) + [0x0A])
            return stdout.flush()
        }
        var environment = self.command.environment
        environment["KINDLY_CHAT_ID"] = chat
        switch ChildProcess.spawnShell(command, environment: environment) {
        case .success(let pid): children.append(pid)
        case .failure(let error): Diagnostics.line("kindly-push: warning: cannot run --on-open: \(error)")
        }
        return true
    }

    /// How long notify waits at its end for `--on-open` commands still running. A command that
    /// opens a chat ends in moments; one that runs on (it started the app itself) is left to
    /// run, and is reaped by whoever inherits it, rather than keep notify alive for as long.
    static let childrenGracePeriod = Duration.seconds(2)

    /// Reaps the `--on-open` children that have ended; with `atEnd`, first waits for them up to
    /// ``childrenGracePeriod``.
    func reapChildren(atEnd: Bool = false) {
        children.removeAll { ChildProcess.reap($0) }
        guard atEnd else { return }
        let deadline = ContinuousClock.now.advanced(by: Self.childrenGracePeriod)
        while !children.isEmpty, ContinuousClock.now < deadline {
            do throws(Errno) {
                try nothingOrErrno { usleep(10_000) }
            } catch {
                // Only an interval out of range fails, which 10 ms is not: the children are looked at again.
            }
            children.removeAll { ChildProcess.reap($0) }
        }
    }

    // MARK: Runs

    func runSingle() -> Int32 {
        defer { reapChildren(atEnd: true) }
        purgeIfDue()
        do throws(CodedError) {
            StandardInput.noteIfTerminal(lineMode: false)
            let input = try StandardInput.readDocument()
            try present(.text(input.indices), in: input, lines: false)
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        if let wait = command.wait, presenter.hasOpenBanners, let notifier {
            let deadline = ContinuousClock.now.advanced(by: wait)
            while presenter.hasOpenBanners {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else { break }
                // A failed wait (the notifier's descriptor gone) ends the wait: nothing more can come.
                guard
                    (try? FileDescriptor(rawValue: notifier.eventDescriptor).waitUntilReadable(
                        milliseconds: DesktopDeadline.milliseconds(left, roundingUp: true))) != nil
                else { break }
                // One push, one banner: after its click there is nothing left to wait for.
                guard let opened = handleEvents(), opened == 0 else { break }
            }
        }
        return Terminal.finish(&stdout)
    }

    /// `--jsonl` and `--follow`: each line is shown as soon as it arrives, taps and the host's
    /// calls are handled meanwhile, for as long as the input is open (a followed FILE or FIFO:
    /// until a signal), and `--wait` after it ends. SIGTERM and SIGINT end the run between two
    /// pushes, with status 0: the push being shown is finished and recorded first. The lines run
    /// on the line engine: the input is a ``FollowedInput``, each line is decided by
    /// ``NotifyDecision`` and acted on by ``Sink`` (``handle(_:lastRead:)``), and while no line
    /// comes the engine waits in ``waitForEvents(input:timeout:)``.
    func runLines() -> Int32 {
        defer { reapChildren(atEnd: true) }
        purgeIfDue()
        signals = command.follow == nil ? -1 : AgentService.signalPipe()
        defer { if signals >= 0 { FileDescriptor(rawValue: signals).close() } }
        if command.follow == nil || command.follow == .standardInput { StandardInput.noteIfTerminal(lineMode: true) }
        var input: FollowedInput
        do throws(CodedError) {
            input = try FollowedInput(command.follow ?? .standardInput, follows: command.follow != nil)
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        followKey = followedFileKey()
        if let followKey, let saved = try? positions?.followPosition(of: followKey) { input.resume(from: saved) }
        if command.follow != nil { announce(input.description) }
        connectIfAbsent()
        let lastRead = input.lastRead
        let processing = DecidedLines(
            NotifyDecision(presenter: presenter), batchBytes: FollowedInput.readBudget,
            act: { line in self.handle(line, lastRead: lastRead) },
            wait: { input, timeout in self.waitForEvents(input: input, timeout: timeout) })
        var sink = Sink(session: self)
        var failure = LineEngine.drive(source: &input, processing: processing, sink: &sink)
        if failure == nil, !stopping, input.isAtEnd, let wait = command.wait { waitForTaps(wait) }
        failure = failure ?? waitFailure
        if !kept.isEmpty {
            let again = followKey == nil ? "they are lost" : "a restart on the same FILE reads them again"
            Diagnostics.line(
                "kindly-push: warning: \(kept.count) kept push\(kept.count == 1 ? " was" : "es were") not shown: the notification server did not answer again; \(again)"
            )
        }
        let status = Terminal.finish(&stdout)
        guard status == 0 else { return status }
        if let failure {
            Diagnostics.report(failure)
            return failure.code.exitStatus
        }
        return 0
    }

    /// `notify`'s sink on the line engine: no output line comes (each line is acted on by
    /// ``handle(_:lastRead:)``, ``DecidedLines``' action); the run ends (``flush()`` says no more)
    /// once the session is ``stopping``.
    struct Sink: LineSink {
        let session: NotifySession

        /// notify's lines are decided, never written as output lines: none come here.
        mutating func accept(_ chunk: borrowing LineEngine.Chunk, bytesRead: Int) -> Bool { false }

        mutating func flush() -> Bool { !session.stopping }

        /// Now, once the session is stopping: the engine asks ``flush()`` at once and ends.
        var flushDeadline: Int? { session.stopping ? MonotonicClock.milliseconds() : nil }
    }

    /// One line of `--jsonl` or `--follow`, after the host's calls that came before it: shown
    /// (decided now, in the state they set), kept while the notification server is away (with
    /// `--follow`), or its error line. `false` when a signal came meanwhile: the run ends after
    /// this push. After the last line of a read, with nothing kept, a followed FILE's position
    /// is recorded: a restart goes on after these lines (not while some wait for the server: a
    /// restart reads those again).
    func handle(_ line: LineEngine.DecidedLine<NotifyDecision>, lastRead: FollowedInput.LastRead) -> Bool {
        guard !stopping else { return false }
        lineNumber += 1
        purgeIfDue()
        applyHostCalls()
        do throws(CodedError) {
            if let text = line.text, !kept.isEmpty, command.follow != nil {
                // While pushes wait for the server, the new ones wait behind them.
                keep(Array(text), at: "line \(lineNumber)", because: nil)
            } else {
                do throws(CodedError) {
                    try show(line.decision().get())
                } catch {
                    guard error.code == .io, command.follow != nil, let text = line.text else { throw error }
                    keep(Array(text), at: "line \(lineNumber)", because: error)
                }
            }
        } catch {
            Diagnostics.line(error.reportLine(at: "line \(lineNumber)"))
        }
        // A signal is taken between two pushes: the one shown is finished and recorded.
        if signals >= 0, NotifySession.signalled(signals) {
            stopping = true
            return false
        }
        if line.isLast, kept.isEmpty, let followKey, let position = lastRead.position {
            do throws(DeduplicationError) {
                try positions?.recordFollowPosition(position, of: followKey, at: NotifySession.now())
            } catch {
                NotifySession.warnAboutStore(error)
            }
        }
        return true
    }

    /// The run's wait while no line comes (the line engine's, through ``DecidedLines``) and
    /// after the input's end: until `input` (`nil`: none; -1: a FILE that nothing reports on,
    /// looked at again within ``FollowedInput/rereadInterval``), the notification server's
    /// events, a host's call, a distributor's call or a signal, for at most `timeout`
    /// milliseconds. Then, in this order: a signal ends the run; ended `--on-open` children are
    /// reaped; the host's calls are applied; taps are handled; kept pushes are tried again
    /// (once a second); the distributors' calls are handled.
    func waitForEvents(input: Int32?, timeout: Int?) {
        var descriptors: [pollfd] = []
        if let input { descriptors.append(pollfd(fd: input, events: Int16(POLLIN), revents: 0)) }
        if let notifier { descriptors.append(pollfd(fd: notifier.eventDescriptor, events: Int16(POLLIN), revents: 0)) }
        if let service { descriptors.append(pollfd(fd: service.descriptor, events: Int16(POLLIN), revents: 0)) }
        if let connector { descriptors.append(pollfd(fd: connector.descriptor, events: Int16(POLLIN), revents: 0)) }
        if signals >= 0 { descriptors.append(pollfd(fd: signals, events: Int16(POLLIN), revents: 0)) }
        // No time set: as long as nothing happens (-1); a FILE without inotify is read again
        // soon, `--on-open` children are reaped within 250 ms, kept pushes tried each second.
        var milliseconds = timeout ?? -1
        for cap in [input == -1 ? FollowedInput.rereadInterval : nil, children.isEmpty ? nil : 250, kept.isEmpty ? nil : 1000] {
            if let cap { milliseconds = milliseconds < 0 ? cap : min(milliseconds, cap) }
        }
        do throws(Errno) {
            try nothingOrErrno(retryOnInterrupt: false) { poll(&descriptors, nfds_t(descriptors.count), Int32(clamping: milliseconds)) }
        } catch {
            // Not retried: a signal (EINTR) goes on to the signal check below.
            if error != .interrupted {
                waitFailure = CodedError(.io, "cannot wait for the input: \(error)")
                stopping = true
                return
            }
        }
        if signals >= 0, NotifySession.signalled(signals) {
            stopping = true
            return
        }
        reapChildren()
        applyHostCalls()
        guard handleEvents() != nil else {
            stopping = true
            return
        }
        presentKeptIfDue()
        handleUnifiedPushCalls()
    }

    /// `--wait` after the input's end: taps (and the host's and distributors' calls) are
    /// handled while banners are open, for at most `wait`.
    func waitForTaps(_ wait: Duration) {
        let deadline = ContinuousClock.now.advanced(by: wait)
        while !stopping, presenter.hasOpenBanners, notifier != nil {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { break }
            waitForEvents(input: nil, timeout: Int(DesktopDeadline.milliseconds(left, roundingUp: true)))
        }
    }

    // MARK: Pushes kept while the server does not answer

    /// At most this many pushes wait for the notification server (the oldest goes first).
    static let maximumKept = 256
    /// And at most this many bytes of them.
    static let maximumKeptBytes = 4 << 20

    /// Keeps a push that could not be shown because the notification server hangs or is gone
    /// (`reason`; `nil`: others wait already), within ``maximumKept`` and ``maximumKeptBytes``.
    func keep(_ bytes: [UInt8], at place: String, because reason: CodedError?) {
        kept.append(bytes)
        keptBytes += bytes.count
        nextTry = ContinuousClock.now.advanced(by: .seconds(1))
        let why = reason.map { ": \($0.message)" } ?? ""
        Diagnostics.line(
            "kindly-push: io: \(place) kept\(why): it is shown once the notification server answers (\(kept.count) waiting)")
        while kept.count > Self.maximumKept || keptBytes > Self.maximumKeptBytes {
            keptBytes -= kept.removeFirst().count
            Diagnostics.line("kindly-push: warning: the oldest kept push is dropped: over \(Self.maximumKept) pushes or 4 MiB wait")
        }
    }

    /// Once a second while pushes are kept: tries the server, and when it answers presents
    /// them newest first, each by its display rules in the app's state now (a chat the user
    /// reads shows nothing; one shown since is not shown again).
    func presentKeptIfDue() {
        guard !kept.isEmpty, ContinuousClock.now >= nextTry else { return }
        nextTry = ContinuousClock.now.advanced(by: .seconds(1))
        applyHostCalls()
        var presented = 0
        while let bytes = kept.last {
            do throws(CodedError) {
                try present(.text(bytes.indices), in: bytes, lines: true)
            } catch  where error.code == .io {
                if presented > 0 { Diagnostics.line("kindly-push: notify: \(presented) kept pushes presented; the server failed again") }
                return
            } catch {
                Diagnostics.line(error.reportLine(at: "a kept push"))
            }
            keptBytes -= kept.removeLast().count
            presented += 1
        }
        Diagnostics.line(
            "kindly-push: notify: the notification server answers again: \(presented) kept push\(presented == 1 ? "" : "es") presented, newest first"
        )
    }

    /// The key of a followed FILE's position in the store: its real path (`nil` for standard
    /// input; a FIFO has no position to keep).
    func followedFileKey() -> String? {
        guard case .path(let path) = command.follow else { return nil }
        guard let real = realpath(path, nil) else { return path }
        defer { free(real) }
        return String(cString: real)
    }

    /// The agent's one line at start: what it follows, its bus name, its
    /// keyring and how many keys it holds, its store; with no key at all, one warning that every
    /// push will show its placeholder. Never a secret.
    func announce(_ source: String) {
        let keyring = command.decryption.keyring
        let name = KeyringInventory.description(of: keyring)
        let inventory = KeyringInventory(of: keyring)
        let state = (try? command.statePath.get()) ?? "none (shown pushes are remembered in memory only)"
        Diagnostics.line(
            "kindly-push: notify agent: follows \(source), owns ai.kindly.Push1 on the session bus; the \(name) \(inventory.phrase); state \(state)"
        )
        if case .keys(0) = inventory {
            Diagnostics.line(
                "kindly-push: warning: the \(name) holds no device key: every push will show its placeholder; create the key there "
                    + "(kindly-push keygen) or name the keyring that holds it (--keyring, --key-file)")
        }
    }

    /// Whether SIGTERM or SIGINT arrived (a byte waits in the signal pipe, which never blocks).
    static func signalled(_ descriptor: Int32) -> Bool {
        var byte: UInt8 = 0
        let pipe = FileDescriptor(rawValue: descriptor)
        let count = try? withUnsafeMutableBytes(of: &byte) { (raw) throws(Errno) in try pipe.read(into: raw) }
        return count == 1
    }
}
