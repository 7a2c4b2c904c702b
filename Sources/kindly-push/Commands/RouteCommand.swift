internal import KindlyPush
internal import KindlyPushCore

/// `kindly-push route`: the display decision of display-rules.md for a push.
struct RouteCommand: DocumentCommand {
    static let name = "route"
    static let abstract = "Print who presents what for a push (the display rules)."
    static let usage = "kindly-push route --app-state <state> [--screen <screen>] [--extension] [--delegate <answer>] [<options>]"
    static let discussion = """
        Reads an APNs JSON document on standard input and prints the decision:
        {"kindly", "kind", "presentation", "presenter", "delegate_consulted"}, with "chat_id",
        "title" and "body" for a banner, and "reason" when a Kindly push that is not marked
        decrypted does not decrypt with the keys at hand. With a pinned sender key (in the keyring,
        or given with --sender-key) the mark kindly.decrypted counts for nothing: a push counts as
        decrypted only when it decrypts now. Exits 0 whatever the decision.
        """
    static let options: [OptionSpec] =
        [
            .value(
                "--app-state", "STATE", "killed, background or foreground (required).",
                choices: DisplayRules.AppState.allCases.map(\.rawValue)),
            .value(
                "--screen", "SCREEN", "chat or other (default: other); read only in the foreground.",
                choices: DisplayRules.Screen.allCases.map(\.rawValue)),
            .flag("--extension", "The host ships a notification service extension built on the SDK."),
            .value(
                "--delegate", "ANSWER", "What shouldHandleNotification returns: allow (default) or suppress.",
                choices: DisplayRules.DelegateAnswer.allCases.map(\.rawValue)),
        ] + SharedOptions.decryption

    let context: RouteContext
    let decryption: KindlyPushDecryption
    let stream: StreamOptions

    init(_ arguments: ParsedArguments, environment: [String: String]) throws(CLIError) {
        try SharedOptions.noPositionals(arguments, command: Self.name)
        guard let state = arguments.value("--app-state").flatMap(DisplayRules.AppState.init(rawValue:)) else {
            throw CLIError(.usage, "missing '--app-state killed|background|foreground' (see 'kindly-push route --help')")
        }
        context = RouteContext(
            appState: state,
            screen: arguments.value("--screen").flatMap(DisplayRules.Screen.init(rawValue:)) ?? .other,
            hasExtension: arguments.has("--extension"),
            delegate: arguments.value("--delegate").flatMap(DisplayRules.DelegateAnswer.init(rawValue:)) ?? .allow)
        stream = try StreamOptions(arguments, command: Self.name)
        decryption = try KeyringChoice.decryption(arguments, environment: environment)
    }

    func process(_ document: JSONValue, into output: inout [UInt8]) throws(CLIError) -> Completion {
        let decision = KindlyPushRouter.route(userInfo: document, context: context, decryption: decryption)
        JSONWriter.write(decision.json, to: &output)
        return .success
    }
}
