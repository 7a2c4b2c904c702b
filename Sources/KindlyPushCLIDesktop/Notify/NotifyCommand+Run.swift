package import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushDesktop

#if canImport(Glibc)
    import Glibc
#endif

/// `notify`'s run: its options checked, then one push, `--jsonl` or the agent (`--follow`)
/// on a ``NotifySession``.
extension NotifyCommand {
    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        func usage(_ text: String) -> CodedError { CodedError(.usage, "\(text) (see 'kindly-push notify --help')") }
        if arguments[NotifyCommand.follow] {
            guard arguments.positionals.count <= 1 else {
                // The agent's unit and bus activation split KINDLY_PUSH_AGENT_OPTIONS at spaces:
                // an --on-open command with arguments arrives as more FILEs.
                let extra = arguments.positionals.dropFirst().map { "'\($0)'" }.joined(separator: ", ")
                throw usage(
                    "'--follow' reads one FILE, or - for standard input, and \(extra) would be more; in agent.env, "
                        + "KINDLY_PUSH_AGENT_OPTIONS is split at spaces: give --on-open's command with its arguments in "
                        + "KINDLY_PUSH_ON_OPEN")
            }
            guard !arguments[NotifyCommand.jsonl] else { throw usage("give either --follow or --jsonl, not both") }
            let name = arguments.positionals.first ?? "-"
            guard !name.isEmpty else { throw usage("'--follow' takes a non-empty FILE, or -") }
            follow = name == "-" ? .standardInput : .path(name)
        } else {
            try SharedOptions.noPositionals(arguments, command: Self.name)
            follow = nil
        }
        // Until a host says otherwise over D-Bus, the agent presents as for a killed app.
        context = try RouteCommand.context(
            arguments, command: Self.name, defaultState: follow == nil ? .background : .killed, hasExtension: true)
        isLineMode = arguments[NotifyCommand.jsonl] || follow != nil
        verbose = arguments[NotifyCommand.verbose]
        // KINDLY_PUSH_ON_OPEN: the command as one value, where options are split at spaces (agent.env).
        onOpen = arguments[NotifyCommand.onOpen] ?? environment["KINDLY_PUSH_ON_OPEN"].flatMap { $0.isEmpty ? nil : $0 }
        if let text = arguments[NotifyCommand.wait] {
            guard let seconds = Double(text), seconds.isFinite, (0...86_400).contains(seconds) else {
                throw usage("'--wait' takes a number of seconds from 0 to 86400")
            }
            wait = .milliseconds(Int64((seconds * 1000).rounded()))
        } else {
            wait = nil
        }
        if let text = arguments[NotifyCommand.dedupTTL] {
            guard let seconds = Self.seconds(text) else {
                throw usage("'--dedup-ttl' takes a whole number with an optional unit s, m, h or d, such as 7d")
            }
            retention = seconds
        } else {
            retention = Self.defaultRetention
        }
        for key in [NotifyCommand.appName, NotifyCommand.desktopEntry, NotifyCommand.onOpen, NotifyCommand.state, NotifyCommand.icon]
        where arguments[key]?.isEmpty == true {
            throw usage("'\(key.name)' takes a non-empty value")
        }
        if let path = arguments[NotifyCommand.state] {
            statePath = .success(path)
        } else {
            do throws(DeduplicationError) {
                statePath = .success(try SQLiteDeduplicator.defaultPath(environment: environment.dictionary))
            } catch {
                statePath = .failure(error)
            }
        }
        self.environment = environment
        decryption = try KeyringChoice.decryption(KeyringOptions(arguments), environment: environment)
        options = DesktopPresenter.Options(
            appName: arguments[NotifyCommand.appName] ?? "Kindly",
            desktopEntry: arguments[NotifyCommand.desktopEntry] ?? Self.defaultDesktopEntry,
            icon: arguments[NotifyCommand.icon] ?? Self.defaultDesktopEntry,
            // A click is only handled while notify runs: a banner posted by a run that exits at
            // once carries no action that would do nothing.
            offersOpenAction: isLineMode || (wait ?? .zero) > .zero, deduplicates: !arguments[NotifyCommand.noDedup],
            showsPassthrough: arguments[NotifyCommand.passthrough])
    }

    /// The name of the `.desktop` file (without `.desktop`) and of the icon that tools/install
    /// installs: the default `desktop-entry` hint and `app_icon` of every banner.
    static let defaultDesktopEntry = "ai.kindly.Push"

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

    package func run() -> Int32 {
        let session: NotifySession
        do throws(CodedError) {
            session = try NotifySession(command: self)
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        return isLineMode ? session.runLines() : session.runSingle()
    }
}
