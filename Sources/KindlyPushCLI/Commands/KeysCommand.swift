package import KindlyPushBase
internal import KindlyPushCore

/// `kindly-push keys list` / `kindly-push keys delete KID`.
package struct KeysCommand: RunnableCommand {
    package static let name = "keys"
    package static let arguments = ["list", "delete <kid>"]
    package static let abstract = "List the stored keys, or delete one."
    package static let examples = [
        Example("List the stored keys", "kindly-push keys list"),
        Example("Delete the key with this kid", "kindly-push keys delete q1w2e3r4t5Y"),
    ]
    package static let discussion = """
        list prints one JSON object per key: {"kid", "public_key", "label", "created"} (never a
        secret). delete removes the key with that kid; exit 4 (key_unavailable) when there is none.
        Readers already running on this keyring (decrypt --jsonl, route --jsonl, notify) follow a
        delete within 1 s: the deleted key's pushes are then key_unavailable.
        A kid that begins with "--" goes after "--": kindly-push keys delete -- --AbCdEfGh.
        """
    package static let keyring = KeyringOptions.keyring.taken
    package static let verbose = KeyringOptions.verbose.taken
    package static let help = SharedOptions.help.taken

    package enum Action {
        case list
        case delete(KeyID)
    }

    package let action: Action
    package let keyring: KeyringOptions
    package let environment: CommandEnvironment

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        switch arguments.positionals.first {
        case "list"?:
            guard arguments.positionals.count == 1 else { throw CodedError(.usage, "keys list takes no argument") }
            action = .list
        case "delete"?:
            guard arguments.positionals.count == 2 else { throw CodedError(.usage, "keys delete takes exactly one kid") }
            guard let kid = KeyID(base64: arguments.positionals[1]) else {
                throw CodedError(.usage, "'\(arguments.positionals[1])' is not a kid (8 bytes of base64url)")
            }
            action = .delete(kid)
        case let other?:
            throw CodedError.usage("unknown keys action '\(other)'; expected list or delete", command: Self.name)
        case nil:
            throw CodedError.usage("missing action: list or delete", command: Self.name)
        }
        keyring = KeyringOptions(arguments)
        self.environment = environment
    }

    package func run() -> Int32 {
        do throws(CodedError) {
            let keyring = try KeyringChoice.resolve(self.keyring, environment: environment)
            switch action {
            case .list:
                // The file keyring lists the entries it can read and reports each one it cannot,
                // and what interrupted writes left behind (removed now).
                var listing = FileKeyring.Listing()
                do throws(KeyringError) {
                    if let files = keyring as? FileKeyring {
                        listing = try files.scan()
                    } else {
                        listing.entries = try keyring.list()
                    }
                } catch {
                    throw CodedError(.io, error.description)
                }
                for path in listing.removedLeftovers {
                    Diagnostics.line("kindly-push: removed \(path), the temporary file of an interrupted write")
                }
                let lines: [JSONValue] = listing.entries.map { entry in
                    [
                        "kid": .string(entry.kid.base64URL), "public_key": .string(entry.publicKey.base64URL),
                        "label": .string(entry.label), "created": .number(JSONNumber(Int(entry.created))),
                    ]
                }
                let status = Terminal.printLines(lines)
                for problem in listing.problems { Diagnostics.report(CodedError(.io, problem.description)) }
                return listing.problems.isEmpty ? status : ErrorCode.io.exitStatus
            case .delete(let kid):
                do throws(KeyringError) {
                    try keyring.delete(kid)
                } catch {
                    if case .notFound = error { throw CodedError(.decryption(.keyUnavailable), error.description) }
                    throw CodedError(.io, error.description)
                }
                return 0
            }
        } catch {
            Diagnostics.report(error)
            return error.code.exitStatus
        }
    }
}
