internal import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// What one binary (`kindly-push`, `kindly-push-desktop`, `kindly-push-redis`,
/// `kindly-push-send`) runs: every command, in the order help lists them, each run here or
/// handed to a sibling binary; the services it links; and the hand-offs a run of a command it
/// runs can still need (`--redis`, the Secret Service). Its `main` hands it to
/// ``kindlyPushMain(_:)``, and commands read it in ``CommandEnvironment/table``.
///
/// Why siblings at all: `kindly-push` links neither libsecret, GIO and SQLite, nor hiredis, nor
/// nghttp2, so that a one-shot `decrypt --key-file` starts as fast as a program that prints a
/// line (tools/bench-startup; docs/architecture.md, "Four binaries").
package struct CommandTable: Sendable {
    /// How a binary runs one command.
    package enum Runner: Sendable {
        /// Made here by this type's ``Command/make(_:environment:)``: the command itself, or the
        /// implementation a binary links (`notify` in `kindly-push-desktop`).
        case here(any RunnableCommand.Type)
        /// Run by this sibling, with the same arguments: this binary does not link what it needs.
        case sibling(SiblingBinary)
    }

    /// One command of a binary: its declaration (name, help, options) and how it runs here.
    package struct Entry: Sendable {
        package let command: any Command.Type
        package let runner: Runner

        /// `command`, run here.
        package static func runs(_ command: any RunnableCommand.Type) -> Entry { Entry(command: command, runner: .here(command)) }

        /// `command`'s declaration, run here by `implementation` (of the same name).
        package static func runs(_ command: any Command.Type, by implementation: any RunnableCommand.Type) -> Entry {
            Entry(command: command, runner: .here(implementation))
        }

        /// `command`, always run by `sibling`.
        package static func handsOff(_ command: any Command.Type, to sibling: SiblingBinary) -> Entry {
            Entry(command: command, runner: .sibling(sibling))
        }
    }

    /// A run of a command that this binary runs, given to a sibling when the arguments ask for
    /// what the sibling links.
    package struct HandOff: Sendable {
        package let sibling: SiblingBinary
        /// Whether these arguments of this command need the sibling.
        package let applies: @Sendable (_ command: any Command.Type, ParsedArguments, CommandEnvironment) -> Bool

        /// `--redis` (a Redis Streams worker, `redis-status`): hiredis is linked in
        /// `kindly-push-redis` (and `kindly-push-send`) only.
        package static let redisWorker = HandOff(sibling: .redis) { command, arguments, _ in
            arguments.isGiven(RedisOptions.url) && command.options.contains(RedisOptions.url)
        }

        /// The Secret Service keyring (``Command/needsDesktop(_:environment:)``): libsecret, GIO
        /// and SQLite are linked in `kindly-push-desktop` (and `kindly-push-redis`) only.
        package static let desktopKeyring = HandOff(sibling: .desktop) { command, arguments, environment in
            command.needsDesktop(arguments, environment: environment)
        }
    }

    /// What a binary links, for the commands it runs to use.
    package struct Services: Sendable {
        /// The Secret Service keyring: `kindly-push-desktop`, `kindly-push-redis`.
        package var desktop: (any DesktopServices)?
        /// Redis Streams workers and `redis-status`: `kindly-push-redis`, `kindly-push-send`.
        package var redis: (any RedisServices)?
        /// APNs: `kindly-push-send`.
        package var send: (any SendServices)?

        package init(desktop: (any DesktopServices)? = nil, redis: (any RedisServices)? = nil, send: (any SendServices)? = nil) {
            self.desktop = desktop
            self.redis = redis
            self.send = send
        }
    }

    /// The binary's file name.
    package let binary: String
    package let services: Services
    /// Every command, in the order help lists them.
    package let entries: [Entry]
    /// Checked in order before a command runs here; the first that applies runs the sibling.
    package let handOffs: [HandOff]

    /// Every command's declaration, in the order help lists them.
    package var commands: [any Command.Type] { entries.map(\.command) }

    /// The entry of the command named `name`.
    package func entry(named name: String) -> Entry? { entries.first { $0.command.name == name } }

    /// How these arguments of `entry`'s command run: its runner, unless a hand-off applies.
    package func runner(for entry: Entry, _ arguments: ParsedArguments, environment: CommandEnvironment) -> Runner {
        guard case .here = entry.runner, let handOff = handOffs.first(where: { $0.applies(entry.command, arguments, environment) }) else {
            return entry.runner
        }
        return .sibling(handOff.sibling)
    }

    /// This table for `binary`, which links `services` as well and runs `running` itself (each
    /// in place of the entry of the same command); `handOffs` replace this table's.
    package func linking(_ binary: SiblingBinary, services added: Services, running: [Entry], handOffs: [HandOff]) -> CommandTable {
        var services = self.services
        services.desktop = added.desktop ?? services.desktop
        services.redis = added.redis ?? services.redis
        services.send = added.send ?? services.send
        let entries = entries.map { entry in running.first { $0.command == entry.command } ?? entry }
        return CommandTable(binary: binary.name, services: services, entries: entries, handOffs: handOffs)
    }

    /// `kindly-push`'s: no services; what needs nghttp2 or libcrypto (`send`, `vapid-keygen`), GIO and SQLite (`notify`,
    /// `doctor`), hiredis (`--redis`) or libsecret (the Secret Service keyring) runs in a sibling.
    package static let kindlyPush = CommandTable(
        binary: "kindly-push", services: Services(),
        entries: [
            .runs(KeygenCommand.self), .runs(KeysCommand.self), .runs(SealCommand.self), .handsOff(SendCommand.self, to: .send),
            .runs(CheckCommand.self), .runs(DecryptCommand.self), .runs(RouteCommand.self), .handsOff(NotifyCommand.self, to: .desktop),
            .handsOff(UnifiedPushCommand.self, to: .desktop),
            .runs(SenderKeygenCommand.self), .handsOff(VAPIDKeygenCommand.self, to: .send), .runs(SendersCommand.self),
            .runs(VerifyCommand.self),
            .handsOff(DoctorCommand.self, to: .desktop), .runs(RedisStatusCommand.self), .runs(DeadLetterCommand.self),
            .runs(CompletionsCommand.self),
            .runs(ManCommand.self),
        ],
        handOffs: [.redisWorker, .desktopKeyring])
}

/// A program installed beside `kindly-push` that a binary hands a run to.
package struct SiblingBinary: Sendable, Equatable {
    /// Its file name.
    package let name: String
    /// What it is, for the error when it cannot be run.
    package let purpose: String

    /// The Secret Service keyring, `notify` and `doctor` (libsecret, GIO, SQLite).
    package static let desktop = SiblingBinary(name: "kindly-push-desktop", purpose: "the Secret Service and desktop part")
    /// Redis Streams workers and `redis-status` (hiredis), with the desktop services.
    package static let redis = SiblingBinary(name: "kindly-push-redis", purpose: "the Redis Streams worker")
    /// `send` (nghttp2, OpenSSL, libcrypto), as a worker too, and `vapid-keygen` (libcrypto's P-256).
    ///
    /// Why a binary of its own (and not `kindly-push-redis`): the HTTP/2 and TLS libraries are
    /// mapped at every start, which neither a one-shot `decrypt` nor a seal worker should pay
    /// for; only the sender needs them.
    package static let send = SiblingBinary(name: "kindly-push-send", purpose: "the sender: APNs, Web Push keys")

    /// Replaces this process with the sibling from the folder of this executable, with
    /// `arguments` and `environment` (the one the decision to run it was made with); returns
    /// only when that fails (an `io` error naming its purpose, reported).
    package func exec(_ arguments: [String], environment: CommandEnvironment) -> Int32 {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else {
            Diagnostics.report(CodedError(.io, "cannot find \(name): /proc/self/exe cannot be read"))
            return ErrorCode.io.exitStatus
        }
        let executable = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let folder = PrivateFile.folderName(of: executable)
        let path = folder + "/" + name
        var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        // execve returns only when it failed.
        let reason: Errno
        do throws(Errno) {
            try nothingOrErrno { execve(path, &argv, &envp) }
            reason = Errno(ENOEXEC)
        } catch {
            reason = error
        }
        for pointer in argv + envp { free(pointer) }
        Diagnostics.report(
            CodedError(.io, "this needs \(name) (\(purpose)) beside kindly-push in \(folder): \(reason)"))
        return ErrorCode.io.exitStatus
    }
}
