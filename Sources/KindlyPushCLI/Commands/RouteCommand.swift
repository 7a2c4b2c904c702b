package import KindlyPushBase
internal import KindlyPushCore

/// `kindly-push route`: the display decision of docs/spec/display-rules.md for a push.
package struct RouteCommand: RunnableCommand, DocumentCommand, DocumentProcessor {
    package static let name = "route"
    package static let abstract = "Print who presents what for a push (the display rules)."
    package static let examples = [
        Example(
            "What a host with a notification service extension shows for a push in the background",
            "kindly-push route --app-state background --extension < push.json")
    ]
    package static let arguments = ["[<file> ...]"]
    package static let discussion = """
        Reads an APNs JSON document on standard input and prints the decision:
        {"kindly", "kind", "presentation", "presenter", "delegate_consulted"}, with "chat_id",
        "title" and "body" for a banner, and "reason" when a Kindly push that is not marked
        decrypted does not decrypt with the keys at hand. With a pinned sender key (in the keyring,
        or given with --sender-key) the mark kindly.decrypted counts for nothing: a push counts as
        decrypted only when it decrypts now. Exits 0 whatever the decision.
        """
    package static let appState = RouteOptions.appState.help("killed, background or foreground (required).").required()
    package static let screen = RouteOptions.screen.taken
    package static let chatId = RouteOptions.chatId.taken
    package static let hasExtension = Flag("--extension", "The host ships a notification service extension built on the SDK.")
    package static let delegate = RouteOptions.delegate.taken
    package static let decryption = OptionGroup(DecryptionOptions.options)

    /// The context of `--app-state` (`defaultState` when it is not given; required without one),
    /// `--screen` and `--delegate`.
    package static func context(
        _ arguments: ParsedArguments, command: String, defaultState: DisplayRules.AppState? = nil, hasExtension: Bool
    ) throws(CodedError) -> RouteContext {
        guard let state = arguments[RouteOptions.appState] ?? defaultState else {
            throw CodedError.usage("missing '\(RouteOptions.appState.name) killed|background|foreground'", command: command)
        }
        let screen = arguments[RouteOptions.screen] ?? .other
        var context = RouteContext(
            appState: state, screen: screen, hasExtension: hasExtension,
            delegate: arguments[RouteOptions.delegate] ?? .allow)
        if let chat = arguments[RouteOptions.chatId] {
            guard screen == .chat else {
                throw CodedError.usage("'\(RouteOptions.chatId.name)' needs '\(RouteOptions.screen.name) chat'", command: command)
            }
            guard !chat.isEmpty else {
                throw CodedError.usage("'\(RouteOptions.chatId.name)' takes a non-empty chat id", command: command)
            }
            context.chatOnScreen = chat
        }
        return context
    }

    package let context: RouteContext
    package let decryption: KindlyPushDecryption
    package let stream: StreamOptions

    package var deviceKeyring: (any Keyring)? { decryption.keyring }

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        context = try RouteCommand.context(arguments, command: Self.name, hasExtension: arguments[Self.hasExtension])
        stream = try StreamOptions(arguments, command: Self.name, environment: environment)
        decryption = try KeyringChoice.decryption(KeyringOptions(arguments), environment: environment)
    }

    package func process(_ document: JSONValue, into output: inout [UInt8]) throws(CodedError) -> LineEngine.LineOutcome {
        let decision = KindlyPushRouter.route(userInfo: document, context: context, decryption: decryption)
        JSONWriter.write(decision.json, to: &output)
        return .success
    }
}

/// The display-rule inputs that `route` and `notify` read from the command line
/// (``RouteCommand/context(_:command:defaultState:hasExtension:)``); each command takes them
/// in its place and gives `--app-state` its help.
package enum RouteOptions {
    package static let appState = Option<DisplayRules.AppState>("--app-state", "STATE", "")
    package static let screen = Option<DisplayRules.Screen>(
        "--screen", "SCREEN", "chat or other (default: other); read only in the foreground.")
    package static let chatId = Option<String>(
        "--chat-id", "ID", "With --screen chat: the chat on top; a decrypted push for another chat counts as other.")
    package static let delegate = Option<DisplayRules.DelegateAnswer>(
        "--delegate", "ANSWER", "What shouldHandleNotification returns: allow (default) or suppress.")
}
