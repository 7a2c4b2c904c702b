package import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// What only `kindly-push-desktop` can do, because it links libsecret, GIO and SQLite: the
/// Secret Service keyring, `notify` and `doctor`.
///
/// `kindly-push` itself links none of them, so that a one-shot `decrypt --key-file` starts as
/// fast as a program that prints a line (issue 12). When a command needs them (see
/// ``Command/needsDesktop(_:environment:)``), it runs `kindly-push-desktop` from its own folder
/// with the same arguments (`exec`), which installs its services before parsing.
package protocol DesktopServices: Sendable {
    /// The Secret Service keyring for `--keyring secret-service`.
    func secretServiceKeyring(environment: CommandEnvironment, for purpose: KeyringChoice.Purpose) throws(CLIError) -> any Keyring
    /// The keyring of `--keyring auto`: the Secret Service when the session bus answers and
    /// offers it, the file keyring otherwise.
    func autoKeyring(environment: CommandEnvironment, for purpose: KeyringChoice.Purpose) throws(CLIError) -> any Keyring
    /// The implementation of a command that only this binary runs (`notify`, `doctor`).
    func makeCommand(_ command: any Command.Type, _ arguments: ParsedArguments, environment: CommandEnvironment) throws(CLIError)
        -> any Command
}

/// A command that only `kindly-push-desktop` runs (`notify`, `doctor`): declared in this
/// library, so that help, completions and the man page know it, and made by the installed
/// ``DesktopServices``. `kindly-push` never makes one: it runs `kindly-push-desktop` first.
package protocol DesktopOnlyCommand: Command {}

extension DesktopOnlyCommand {
    /// Never called where the services are installed (``make(_:environment:)`` asks them).
    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CLIError) {
        throw CLIError(.io, "'\(Self.name)' runs in \(DesktopBinary.name)")
    }

    package static func make(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CLIError) -> any Command {
        try DesktopBinary.required().makeCommand(Self.self, arguments, environment: environment)
    }

    package static func needsDesktop(_ arguments: ParsedArguments, environment: CommandEnvironment) -> Bool { true }

    package func run() -> Int32 { ErrorCode.io.exitStatus }
}

/// Finding and running `kindly-push-desktop`.
package enum DesktopBinary {
    /// Its file name, beside `kindly-push`.
    package static let name = "kindly-push-desktop"

    /// The services of this process: set once, by `kindly-push-desktop`'s `main`, before anything
    /// else runs and before any other thread exists; read-only afterwards.
    package nonisolated(unsafe) static var installed: (any DesktopServices)?

    /// The services, or the `io` error of a binary that has none.
    package static func required() throws(CLIError) -> any DesktopServices {
        guard let services = installed else {
            throw CLIError(.io, "this needs \(name), which was not run")
        }
        return services
    }

    /// Replaces this process with `kindly-push-desktop` from the folder of this executable, with
    /// `arguments` and `environment` (the one the decision to run it was made with); returns only
    /// when that fails (an `io` error, reported).
    package static func exec(_ arguments: [String], environment: CommandEnvironment) -> Int32 {
        SiblingBinary.exec(name, arguments, environment: environment, purpose: "the Secret Service and desktop part")
    }
}

/// The programs installed beside `kindly-push` that it hands a run to (`kindly-push-desktop`,
/// `kindly-push-redis`).
package enum SiblingBinary {
    /// Replaces this process with `name` from the folder of this executable, with `arguments` and
    /// `environment`; returns only when that fails (an `io` error naming `purpose`, reported).
    package static func exec(_ name: String, _ arguments: [String], environment: CommandEnvironment, purpose: String) -> Int32 {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else {
            Diagnostics.report(CLIError(.io, "cannot find \(name): /proc/self/exe cannot be read"))
            return ErrorCode.io.exitStatus
        }
        let executable = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let folder = PrivateFile.folderName(of: executable)
        let path = folder + "/" + name
        var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        execve(path, &argv, &envp)
        let reason = Errno.current
        for pointer in argv + envp { free(pointer) }
        Diagnostics.report(
            CLIError(.io, "this needs \(name) (\(purpose)) beside kindly-push in \(folder): \(reason)"))
        return ErrorCode.io.exitStatus
    }
}
