package import KindlyPushBase
internal import KindlyPushCore

/// `kindly-push senders add|list|delete`: the sender keys the device pins (docs/spec/wire-format.md section 7.1).
package struct SendersCommand: RunnableCommand {
    package static let name = "senders"
    package static let abstract = "Pin a sender key in the keyring, list the pinned keys, or remove one."
    package static let examples = [
        Example("Pin the backend's sender key on the device", "kindly-push senders add --public-key \"$SENDER_KEY\" --label backend"),
        Example("List the pinned sender keys", "kindly-push senders list"),
    ]
    package static let arguments = ["add", "list", "delete <sid>"]
    package static let discussion = """
        Device side. add pins a sender public key (from a source you trust: the app's
        configuration, sender-keygen's output); from then on this keyring's reader is in pinned
        mode: only version 2 and version 3 mode_auth pushes from a pinned sender decrypt, and
        version 1 and version 3 mode_base pushes are refused (untrusted_sender). list prints one JSON object per pinned key: {"sid", "public_key",
        "label", "created"}. delete removes the key with that sid; exit 7 (untrusted_sender) when
        none is pinned. Readers already running on this keyring (decrypt --jsonl, route --jsonl,
        notify) follow an add or a delete within 1 s: the deleted sender's pushes are then
        untrusted_sender, and after the first add version 1 pushes are refused. To rotate, add the
        new key before the backend switches to it, then delete the old one. A sid that begins with "--" goes after "--": kindly-push senders delete -- --AbCdEfGh.
        """
    package static let publicKey = Option<String>(
        "--public-key", "B64", "The sender public key to pin (base64url or base64), for add.", required: true
    ).only("add")
    package static let label = Option<String>("--label", "TEXT", "A label for the pinned key, for add (default: \"kindly-push\").").only(
        "add")
    package static let keyring = KeyringOptions.keyring.taken
    package static let verbose = KeyringOptions.verbose.taken
    package static let help = SharedOptions.help.taken

    package enum Action {
        case add(SenderPublicKey, label: String)
        case list
        case delete(SenderID)
    }

    package let action: Action
    package let keyring: KeyringOptions
    package let environment: CommandEnvironment

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        let positionals = arguments.positionals
        switch positionals.first {
        case "add"?:
            guard positionals.count == 1 else { throw CodedError(.usage, "senders add takes no argument; give --public-key B64") }
            guard let text = arguments[Self.publicKey] else {
                throw CodedError.usage("missing '--public-key B64'", command: Self.name)
            }
            if let label = arguments[Self.label], let problem = KeyringLabel.problem(with: label) {
                throw CodedError(.usage, "--label: \(problem)")
            }
            let key: SenderPublicKey
            do throws(KeyDecodingError) {
                key = try SenderPublicKey(base64: text)
            } catch {
                throw CodedError(.usage, "--public-key: \(error)")
            }
            if let reason = key.unusableReason { throw CodedError(.usage, "--public-key: \(reason): it is not pinned") }
            action = .add(key, label: arguments[Self.label] ?? "kindly-push")
        case "list"?:
            guard positionals.count == 1 else { throw CodedError(.usage, "senders list takes no argument") }
            action = .list
        case "delete"?:
            guard positionals.count == 2 else { throw CodedError(.usage, "senders delete takes exactly one sid") }
            guard let sid = SenderID(base64: positionals[1]) else {
                throw CodedError(.usage, "'\(positionals[1])' is not a sid (8 bytes of base64url)")
            }
            action = .delete(sid)
        case let other?:
            throw CodedError.usage("unknown senders action '\(other)'; expected add, list or delete", command: Self.name)
        case nil:
            throw CodedError.usage("missing action: add, list or delete", command: Self.name)
        }
        keyring = KeyringOptions(arguments)
        self.environment = environment
    }

    package func run() -> Int32 {
        do throws(CodedError) {
            // A pin is stored as a key is: never in the file keyring for a bus that does not answer.
            let purpose: KeyringChoice.Purpose
            if case .add = action { purpose = .store } else { purpose = .manage }
            let keyring = try KeyringChoice.resolve(self.keyring, environment: environment, for: purpose)
            switch action {
            case .add(let key, let label):
                do throws(KeyringError) {
                    try keyring.pinSender(key, label: label)
                } catch {
                    throw CodedError(.io, "cannot pin the sender key in the \(keyring.name) keyring: \(error)")
                }
                return 0
            case .list:
                let pinned: [PinnedSender]
                do throws(KeyringError) {
                    pinned = try keyring.pinnedSenders()
                } catch {
                    throw CodedError(.io, error.description)
                }
                let lines: [JSONValue] = pinned.map { entry in
                    [
                        "sid": .string(entry.sid.base64URL), "public_key": .string(entry.publicKey.base64URL),
                        "label": .string(entry.label), "created": .number(JSONNumber(Int(entry.created))),
                    ]
                }
                return Terminal.printLines(lines)
            case .delete(let sid):
                do throws(KeyringError) {
                    try keyring.unpinSender(sid)
                } catch {
                    if case .senderNotFound = error { throw CodedError(.decryption(.untrustedSender), error.description) }
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
