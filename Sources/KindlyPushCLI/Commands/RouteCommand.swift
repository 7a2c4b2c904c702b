package import KindlyPushBase
internal import KindlyPushCore

/// `kindly-push route`: the display decision of docs/spec/display-rules.md for a push.
package struct RouteCommand: DocumentCommand {
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
    package static let options: [OptionSpec] =
        [
            appStateOption("killed, background or foreground (required).", required: true), screenOption, chatIdOption,
            .flag("--extension", "The host ships a notification service extension built on the SDK."),
            delegateOption,
        ] + SharedOptions.decryption

    /// The display-rule inputs that `route` and `notify` read from the command line.
    package static func appStateOption(_ help: String, required: Bool = false) -> OptionSpec {
        .value("--app-state", "STATE", help, choices: DisplayRules.AppState.allCases.map(\.rawValue), required: required)
    }
    package static let screenOption = OptionSpec.value(
        "--screen", "SCREEN", "chat or other (default: other); read only in the foreground.",
        choices: DisplayRules.Screen.allCases.map(\.rawValue))
    package static let chatIdOption = OptionSpec.value(
        "--chat-id", "ID", "With --screen chat: the chat on top; a decrypted push for another chat counts as other.")
    package static let delegateOption = OptionSpec.value(
        "--delegate", "ANSWER", "What shouldHandleNotification returns: allow (default) or suppress.",
        choices: DisplayRules.DelegateAnswer.allCases.map(\.rawValue))

    /// The context of `--app-state` (`defaultState` when it is not given; required without one),
    /// `--screen` and `--delegate`.
    package static func context(
        _ arguments: ParsedArguments, command: String, defaultState: DisplayRules.AppState? = nil, hasExtension: Bool
    ) throws(CLIError) -> RouteContext {
        guard let state = arguments.value("--app-state").flatMap(DisplayRules.AppState.init(rawValue:)) ?? defaultState else {
            throw CLIError(.usage, "missing '--app-state killed|background|foreground' (see 'kindly-push \(command) --help')")
        }
        let screen = arguments.value("--screen").flatMap(DisplayRules.Screen.init(rawValue:)) ?? .other
        var context = RouteContext(
            appState: state, screen: screen, hasExtension: hasExtension,
            delegate: arguments.value("--delegate").flatMap(DisplayRules.DelegateAnswer.init(rawValue:)) ?? .allow)
        if let chat = arguments.value("--chat-id") {
            guard screen == .chat else {
                throw CLIError(.usage, "'--chat-id' needs '--screen chat' (see 'kindly-push \(command) --help')")
            }
            guard !chat.isEmpty else {
                throw CLIError(.usage, "'--chat-id' takes a non-empty chat id (see 'kindly-push \(command) --help')")
            }
            context.chatOnScreen = chat
        }
        return context
    }

    package let context: RouteContext
    package let decryption: KindlyPushDecryption
    package let stream: StreamOptions

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CLIError) {
        context = try RouteCommand.context(arguments, command: Self.name, hasExtension: arguments.has("--extension"))
        stream = try StreamOptions(arguments, command: Self.name, environment: environment)
        decryption = try KeyringChoice.decryption(arguments, environment: environment)
    }

    package func process(_ document: JSONValue, into output: inout [UInt8]) throws(CLIError) -> Completion {
        let decision = KindlyPushRouter.route(userInfo: document, context: context, decryption: decryption)
        JSONWriter.write(decision.json, to: &output)
        return .success
    }
}
