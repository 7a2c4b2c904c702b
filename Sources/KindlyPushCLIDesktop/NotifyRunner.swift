internal import KindlyPush
internal import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushDesktop

#if canImport(Glibc)
    import Glibc
#endif

/// `kindly-push notify`: shows pushes as desktop notifications (the freedesktop Notifications
/// service), handles taps, and shows a push delivered twice once.
struct NotifyRunner: Command {
    static let name = NotifyCommand.name
    static let abstract = NotifyCommand.abstract
    static let discussion = NotifyCommand.discussion
    static let options = NotifyCommand.options

    let context: RouteContext
    let decryption: KindlyPushDecryption
    let options: DesktopPresenter.Options
    let isLineMode: Bool
    let verbose: Bool
    let onOpen: String?
    let wait: Duration?
    let statePath: String
    let deduplicates: Bool
    let retention: Int64
    let environment: CommandEnvironment

    init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CLIError) {
        try SharedOptions.noPositionals(arguments, command: Self.name)
        func usage(_ text: String) -> CLIError { CLIError(.usage, "\(text) (see 'kindly-push notify --help')") }
        context = try RouteCommand.context(arguments, command: Self.name, defaultState: .background, hasExtension: true)
        isLineMode = arguments.has("--jsonl")
        verbose = arguments.has("--verbose")
        onOpen = arguments.value("--on-open")
        if let text = arguments.value("--wait") {
            guard let seconds = Double(text), seconds.isFinite, (0...86_400).contains(seconds) else {
                throw usage("'--wait' takes a number of seconds from 0 to 86400")
            }
            wait = .milliseconds(Int64((seconds * 1000).rounded()))
        } else {
            wait = nil
        }
        if let text = arguments.value("--dedup-ttl") {
            guard let seconds = NotifyRunner.seconds(text) else {
                throw usage("'--dedup-ttl' takes a whole number with an optional unit s, m, h or d, such as 7d")
            }
            retention = seconds
        } else {
            retention = 7 * 86_400
        }
        for name in ["--app-name", "--desktop-entry", "--on-open", "--state"] where arguments.value(name)?.isEmpty == true {
            throw usage("'\(name)' takes a non-empty value")
        }
        statePath = arguments.value("--state") ?? SQLiteDeduplicator.defaultPath(environment: environment.dictionary)
        deduplicates = !arguments.has("--no-dedup")
        self.environment = environment
        decryption = try KeyringChoice.decryption(arguments, environment: environment)
        options = DesktopPresenter.Options(
            appName: arguments.value("--app-name") ?? "Kindly", desktopEntry: arguments.value("--desktop-entry"),
            // A click is only handled while notify runs: a banner posted by a run that exits at
            // once carries no action that would do nothing.
            offersOpenAction: isLineMode || (wait ?? .zero) > .zero, deduplicates: deduplicates,
            showsPassthrough: arguments.has("--passthrough"))
    }

    /// `N`, `Ns`, `Nm`, `Nh` or `Nd` in seconds.
    static func seconds(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, let factor = units[last] {
            unit = factor
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let count = Int64(digits), count >= 0 else { return nil }
        let (seconds, overflow) = count.multipliedReportingOverflow(by: unit)
        return overflow ? nil : seconds
    }

    func run() -> Int32 {
        let session = NotifySession(command: self)
        return isLineMode ? session.runLines() : session.runSingle()
    }
}

/// One run of `notify`: the presenter with its store, the bus connection (made when a push first
/// needs it, and again after it broke), the `--on-open` children, and standard output.
private final class NotifySession {
    let command: NotifyRunner
    let presenter: DesktopPresenter
    var notifier: DesktopNotifier?
    var children: [pid_t] = []
    var stdout = OutputStream(descriptor: STDOUT_FILENO, capacity: 4096)
    var lastPurge: Int64 = 0

    init(command: NotifyRunner) {
        self.command = command
        // The store, or an in-memory one with one line on standard error: never a lost banner.
        let store: any Deduplicator
        do throws(DeduplicationError) {
            store = try SQLiteDeduplicator(path: command.statePath)
        } catch {
            NotifySession.warnAboutStore(error)
            store = InMemoryDeduplicator()
        }
        presenter = DesktopPresenter(
            context: command.context, decryption: command.decryption, store: store, options: command.options,
            storeFailed: { NotifySession.warnAboutStore($0) })
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

    /// The bus connection, made now when there is none.
    func connectedNotifier() throws(CLIError) -> DesktopNotifier {
        if let notifier { return notifier }
        do throws(DesktopNotifierError) {
            let fresh = try DesktopNotifier()
            notifier = fresh
            return fresh
        } catch {
            throw CLIError(.io, error.description)
        }
    }

    /// Shows one push. Throws `bad_input`, `not_kindly` (without --passthrough) or `io` (no server).
    func present(_ bytes: UnsafeRawBufferPointer) throws(CLIError) {
        let document = try StandardInput.parseObject(bytes)
        let plan = presenter.plan(userInfo: document)
        if let outcome = plan.outcomeWithoutNotifier {
            report(outcome, plan: plan)
            if outcome == .notKindly {
                throw CLIError(.notKindly, "the push is not Kindly's; the host shows it (or use --passthrough)")
            }
            return
        }
        let notifier = try connectedNotifier()
        do throws(DesktopNotifierError) {
            report(try presenter.show(plan, with: notifier, at: NotifySession.now()), plan: plan)
        } catch {
            // A broken or stalled connection is made afresh for the next push.
            self.notifier = nil
            throw CLIError(.io, error.description)
        }
    }

    /// With `--verbose`, what became of a push, on standard error (never its text).
    func report(_ outcome: DesktopPresenter.Outcome, plan: DesktopPresenter.Plan) {
        guard command.verbose else { return }
        let reason = plan.decision.reason.map { " (\($0.code))" } ?? ""
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

    // MARK: Taps

    /// Handles the server's events: a click on a banner opens its chat. Returns how many chats
    /// were opened, or nil when standard output failed.
    func handleEvents() -> Int? {
        guard let notifier else { return 0 }
        var opened = 0
        for event in notifier.takeEvents() {
            guard let chat = presenter.chatToOpen(for: event) else { continue }
            guard open(chat) else { return nil }
            opened += 1
        }
        return opened
    }

    /// Runs `--on-open` with `KINDLY_CHAT_ID`, or prints the event line. False when standard
    /// output failed.
    func open(_ chat: String) -> Bool {
        guard let command = command.onOpen else {
            let line: JSONValue = ["event": "opened", "chat_id": .string(chat)]
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
            usleep(10_000)
            children.removeAll { ChildProcess.reap($0) }
        }
    }

    // MARK: Runs

    func runSingle() -> Int32 {
        defer { reapChildren(atEnd: true) }
        purgeIfDue()
        do throws(CLIError) {
            StandardInput.noteIfTerminal(lineMode: false)
            let input = try StandardInput.readDocument()
            try input.withUnsafeBytes { raw in Result { () throws(CLIError) in try present(raw) } }.get()
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        if let wait = command.wait, presenter.hasOpenBanners, let notifier {
            let deadline = ContinuousClock.now.advanced(by: wait)
            while presenter.hasOpenBanners {
                let left = ContinuousClock.now.duration(to: deadline)
                guard left > .zero else { break }
                var descriptor = pollfd(fd: notifier.eventDescriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, DesktopDeadline.milliseconds(left, roundingUp: true))
                // One push, one banner: after its click there is nothing left to wait for.
                guard let opened = handleEvents(), opened == 0 else { break }
            }
        }
        return Terminal.finish(&stdout)
    }

    /// `--jsonl`: each line is shown as soon as it arrives, and clicks are handled meanwhile,
    /// for as long as standard input is open (and `--wait` after it ends).
    func runLines() -> Int32 {
        defer { reapChildren(atEnd: true) }
        purgeIfDue()
        StandardInput.noteIfTerminal(lineMode: true)
        var reader = LineBatchReader(maximumLineLength: StandardInput.maximumDocumentSize)
        var batch = LineBatchReader.Batch()
        var inputOpen = true
        var readFailure: CLIError?
        var lineNumber = 0
        var waitDeadline: ContinuousClock.Instant?
        // Connect up front, so that clicks are heard from the first banner on; a server that is
        // not there yet is tried again for each push.
        _ = try? connectedNotifier()
        while true {
            var descriptors: [pollfd] = []
            if inputOpen { descriptors.append(pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)) }
            if let notifier { descriptors.append(pollfd(fd: notifier.eventDescriptor, events: Int16(POLLIN), revents: 0)) }
            var timeout: Int32 = children.isEmpty ? -1 : 250
            if !inputOpen {
                guard let waitDeadline, presenter.hasOpenBanners, notifier != nil else { break }
                let left = ContinuousClock.now.duration(to: waitDeadline)
                guard left > .zero else { break }
                timeout = DesktopDeadline.milliseconds(left, roundingUp: true)
            }
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            if ready < 0, errno != EINTR {
                readFailure = CLIError(.io, "cannot wait for standard input: \(String(cString: strerror(errno)))")
                break
            }
            reapChildren()
            guard handleEvents() != nil else { break }
            guard inputOpen, ready > 0, descriptors[0].revents != 0 else { continue }
            do throws(LineBatchReader.ReadError) {
                // One read: whole lines are shown now; a partial line waits for its end.
                try reader.nextBatch(into: &batch, maximumLines: .max, maximumBytes: 1 << 20, maximumReads: 1)
            } catch {
                readFailure = CLIError(.io, "cannot read standard input: \(error)")
                break
            }
            for line in batch.lines {
                lineNumber += 1
                purgeIfDue()
                do throws(CLIError) {
                    switch line {
                    case .oversized:
                        throw CLIError(.badInput, "the line is over 64 KiB")
                    case .text(let range):
                        try batch.bytes.withUnsafeBytes { raw in
                            Result { () throws(CLIError) in try present(UnsafeRawBufferPointer(rebasing: raw[range])) }
                        }.get()
                    }
                } catch {
                    Diagnostics.line("kindly-push: \(error.code.rawValue): line \(lineNumber): \(error.message)")
                }
            }
            if reader.isAtEnd {
                inputOpen = false
                waitDeadline = command.wait.map { ContinuousClock.now.advanced(by: $0) }
            }
        }
        let status = Terminal.finish(&stdout)
        guard status == 0 else { return status }
        if let readFailure {
            Diagnostics.report(readFailure)
            return readFailure.code.exitStatus
        }
        return 0
    }
}
