package import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// What one binary (`kindly-push`, `kindly-push-desktop`, `kindly-push-redis`,
/// `kindly-push-send`) runs: every command, in the order help lists them, each declared and run
/// here or handed by name to the sibling binary that declares it; the services it links; and
/// the hand-offs a run of a command it runs can still need (`--redis`, the Secret Service). Its `main` hands it to
/// ``kindlyPushMain(_:)``, and commands read it in ``CommandEnvironment/table``.
///
/// Why siblings at all: `kindly-push` links neither libsecret, GIO and SQLite, nor hiredis, nor
/// nghttp2, so that a one-shot `decrypt --key-file` starts as fast as a program that prints a
/// line (tools/bench-startup; docs/architecture.md, "Four binaries").
package struct CommandTable: Sendable {
    /// How a binary runs one command.
    package enum Runner: Sendable {
        /// Declared here, and made here by this type's ``Command/make(_:environment:)``: the
        /// command itself, or another way of doing its job (`seal --recipients-inline`).
        case here(any RunnableCommand.Type)
        /// Run by this sibling, with the same arguments: this binary does not link what it needs
        /// (for an entry, the sibling declares the command too).
        case sibling(SiblingBinary)
    }

    /// One command of a binary, by name, and how it runs here. A command run by a sibling only
    /// is declared there, not here: this binary knows its name, and asks the sibling for its
    /// declaration when help, completions or the man page list it (``declarations(asking:)``).
    package struct Entry: Sendable {
        package let name: String
        package let runner: Runner

        /// The command's type, when this binary links it.
        package var command: (any RunnableCommand.Type)? {
            guard case .here(let command) = runner else { return nil }
            return command
        }

        /// `command`, run here.
        package static func runs(_ command: any RunnableCommand.Type) -> Entry { Entry(name: command.name, runner: .here(command)) }

        /// The command called `name`, declared and always run by `sibling`.
        package static func handsOff(_ name: String, to sibling: SiblingBinary) -> Entry {
            Entry(name: name, runner: .sibling(sibling))
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
        /// Redis Streams workers: `kindly-push-redis`, `kindly-push-send`.
        package var redis: (any RedisServices)?

        package init(desktop: (any DesktopServices)? = nil, redis: (any RedisServices)? = nil) {
            self.desktop = desktop
            self.redis = redis
        }
    }

    /// The binary's file name.
    package let binary: String
    package let services: Services
    /// Every command, in the order help lists them.
    package let entries: [Entry]
    /// Checked in order before a command runs here; the first that applies runs the sibling.
    package let handOffs: [HandOff]

    /// Every command's name, in the order help lists them.
    package var names: [String] { entries.map(\.name) }

    /// The entry of the command named `name`.
    package func entry(named name: String) -> Entry? { entries.first { $0.name == name } }

    /// How these arguments of `command`, run here, run: here, unless a hand-off applies.
    package func runner(for command: any RunnableCommand.Type, _ arguments: ParsedArguments, environment: CommandEnvironment) -> Runner {
        guard let handOff = handOffs.first(where: { $0.applies(command, arguments, environment) }) else { return .here(command) }
        return .sibling(handOff.sibling)
    }

    /// This table for `binary`, which links `services` as well and runs `running` itself (each
    /// in place of the entry of the same name); `handOffs` replace this table's.
    package func linking(_ binary: SiblingBinary, services added: Services, running: [Entry], handOffs: [HandOff]) -> CommandTable {
        var services = self.services
        services.desktop = added.desktop ?? services.desktop
        services.redis = added.redis ?? services.redis
        let entries = entries.map { entry in running.first { $0.name == entry.name } ?? entry }
        return CommandTable(binary: binary.name, services: services, entries: entries, handOffs: handOffs)
    }

    /// The declarations of the commands this binary runs here, in the order help lists them:
    /// what it prints for a sibling that asks (``SiblingBinary/declarationsArgument``).
    package var ownDeclarations: [CommandDeclaration] { entries.compactMap { $0.command?.declaration } }

    /// Every command's declaration, in the order help lists them: this binary's own, and each
    /// of the others from `ask`, called once per sibling that declares one.
    package func declarations(
        asking ask: (SiblingBinary) throws(CodedError) -> [CommandDeclaration]
    ) throws(CodedError) -> [CommandDeclaration] {
        var answers: [String: [CommandDeclaration]] = [:]
        var declarations: [CommandDeclaration] = []
        for entry in entries {
            switch entry.runner {
            case .here(let command):
                declarations.append(command.declaration)
            case .sibling(let sibling):
                if answers[sibling.name] == nil { answers[sibling.name] = try ask(sibling) }
                guard let declaration = answers[sibling.name]?.first(where: { $0.name == entry.name }) else {
                    throw CodedError(.io, "\(sibling.name) does not declare '\(entry.name)': it is not of this kindly-push's version")
                }
                declarations.append(declaration)
            }
        }
        return declarations
    }

    /// Every command's declaration, each sibling's asked of the sibling itself: what help,
    /// completions and the man page list.
    package func declarations(environment: CommandEnvironment) throws(CodedError) -> [CommandDeclaration] {
        try declarations { (sibling) throws(CodedError) in try sibling.declarations(environment: environment) }
    }

    /// `kindly-push`'s: no services; what needs nghttp2 or libcrypto (`send`, `vapid-keygen`),
    /// GIO and SQLite (`notify`, `unifiedpush`, `doctor`) or hiredis (`redis-status`,
    /// `dead-letter`) is declared and run in a sibling, and so is a run with `--redis`
    /// (hiredis) or the Secret Service keyring (libsecret).
    package static let kindlyPush = CommandTable(
        binary: "kindly-push", services: Services(),
        entries: [
            .runs(KeygenCommand.self), .runs(KeysCommand.self), .runs(SealCommand.self), .handsOff("send", to: .send),
            .runs(CheckCommand.self), .runs(DecryptCommand.self), .runs(RouteCommand.self), .handsOff("notify", to: .desktop),
            .handsOff("unifiedpush", to: .desktop), .runs(SenderKeygenCommand.self), .handsOff("vapid-keygen", to: .send),
            .runs(SendersCommand.self), .runs(VerifyCommand.self), .handsOff("doctor", to: .desktop),
            .handsOff("redis-status", to: .redis), .handsOff("dead-letter", to: .redis), .runs(CompletionsCommand.self),
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

    /// The argument that makes a binary print the declarations of the commands it runs, one
    /// JSON line each (``CommandDeclaration/jsonLine``), and exit: how a binary learns the
    /// declarations of the commands its siblings declare. It is no command, and help lists it
    /// nowhere.
    package static let declarationsArgument = "--declarations"

    /// The sibling's path, in the folder of this executable, and that folder.
    private func location() throws(CodedError) -> (path: String, folder: String) {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { throw CodedError(.io, "cannot find \(name): /proc/self/exe cannot be read") }
        let executable = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let folder = PrivateFile.folderName(of: executable)
        return (folder + "/" + name, folder)
    }

    /// Replaces this process with the sibling from the folder of this executable, with
    /// `arguments` and `environment` (the one the decision to run it was made with); returns
    /// only when that fails (an `io` error naming its purpose, reported).
    package func exec(_ arguments: [String], environment: CommandEnvironment) -> Int32 {
        let path: String
        let folder: String
        do throws(CodedError) {
            (path, folder) = try location()
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
        // execve returns only when it failed.
        let failure = withCStringArray([path] + arguments) { argv in
            withCStringArray(environment.assignments) { envp in
                Result { () throws(Errno) in try nothingOrErrno { execve(path, argv, envp) } }
            }
        }
        let reason: Errno
        switch failure {
        case .failure(let error): reason = error
        case .success: reason = Errno(rawValue: ENOEXEC)
        }
        Diagnostics.report(
            CodedError(.io, "this needs \(name) (\(purpose)) beside kindly-push in \(folder): \(reason)"))
        return ErrorCode.io.exitStatus
    }

    /// The declarations of the commands the sibling runs, as it prints them for
    /// ``declarationsArgument``; an `io` error when it cannot be run, fails or prints anything else.
    package func declarations(environment: CommandEnvironment) throws(CodedError) -> [CommandDeclaration] {
        let (path, folder) = try location()
        func failure(_ reason: String) -> CodedError {
            CodedError(.io, "listing the commands needs \(name) (\(purpose)) beside kindly-push in \(folder): \(reason)")
        }
        let output: [UInt8]
        switch ChildProcess.output(of: path, [name, Self.declarationsArgument], environment: environment) {
        case .success(let bytes): output = bytes
        case .failure(let error): throw failure(error.description)
        }
        var declarations: [CommandDeclaration] = []
        for line in output.split(separator: 0x0A) {
            guard let declaration = CommandDeclaration(jsonLine: line) else { throw failure("it printed no declarations") }
            declarations.append(declaration)
        }
        return declarations
    }
}
