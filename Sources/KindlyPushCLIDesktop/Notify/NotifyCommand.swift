package import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushDesktop

/// `kindly-push notify`: shows pushes as desktop notifications (the freedesktop Notifications
/// service), handles taps, and shows a push delivered twice once.
///
/// Declared and run in `kindly-push-desktop` (GIO, SQLite); every other binary hands it there.
/// Its run is in NotifyCommand+Run.swift.
package struct NotifyCommand: RunnableCommand {
    package static let name = "notify"
    package static let arguments = ["", "--follow [FILE|-]"]
    package static let abstract = "Show a push as a desktop notification (freedesktop Notifications)."
    package static let examples = [
        Example("Show a push as a desktop notification", "kindly-push notify < push.json"),
        Example("Show each push as it arrives", "tail -f pushes.jsonl | kindly-push notify --jsonl"),
    ]
    package static let discussion = """
        Reads an APNs JSON document on standard input (with --jsonl, one per line, each shown as
        its line arrives, for as long as the input is open) and shows what the display rules
        decide, as 'route' would with a notification service extension: a banner with the
        decrypted title and body, the push's placeholder alert when it does not decrypt, or
        nothing. A new banner of a chat replaces the chat's last one. A push already shown (the
        same message, or the same envelope) is not shown again; the state store is
        $XDG_STATE_HOME/kindly-push/state.sqlite3 (0600), and a store that cannot be used is
        reported once on standard error while notify goes on showing every push.
        A push that is not Kindly's exits 1 (with --jsonl: one line on standard error), unless
        --passthrough shows it as its own alert.
        While notify runs (--jsonl, or --wait after one push), a click on a banner runs
        --on-open with the chat id in KINDLY_CHAT_ID, or prints {"event":"opened","chat_id":...}.
        Every call to the notification server has a 2 s budget: no server is 'io' (74).
        With --follow [FILE|-] notify is the desktop agent (docs/desktop.md): it owns ai.kindly.Push1
        on the session bus, where the host app calls SetAppState(state, chat_id) and Started(),
        and hears the signal Opened(chat_id) for every tap; until SetAppState it presents as for a
        killed app. A tap on a placeholder opens the app with no chat id. A FILE is followed
        across rotation and truncation, a FIFO across writers; neither may be one that another
        user owns or can write, nor lie in a folder they can change. SIGTERM or SIGINT end it between
        two pushes with status 0. A second agent on the bus exits 74: the name is taken.
        The agent also serves org.unifiedpush.Connector2 as ai.kindly.Push and shows each
        UnifiedPush message as it shows a followed line (see 'kindly-push unifiedpush --help').
        """
    package static let appState = RouteOptions.appState.help("killed, background or foreground (default: background).")
    package static let screen = RouteOptions.screen.taken
    package static let chatId = RouteOptions.chatId.taken
    package static let delegate = RouteOptions.delegate.taken
    package static let appName = Option<String>("--app-name", "NAME", "The notification's application name (default: Kindly).")
    package static let desktopEntry = Option<String>(
        "--desktop-entry", "NAME", "The desktop-entry hint: a .desktop file name without .desktop (default: ai.kindly.Push).")
    package static let icon = Option<String>("--icon", "ICON", "The app_icon: an icon name or a file:// URI (default: ai.kindly.Push).")
    package static let onOpen = Option<String>(
        "--on-open", "COMMAND",
        "Run this shell command when a banner is clicked, with KINDLY_CHAT_ID set (default: KINDLY_PUSH_ON_OPEN).")
    package static let wait = Option<String>(
        "--wait", "SECONDS", "After the push (with --jsonl: after the input ends), wait this long for a click.")
    package static let passthrough = Flag("--passthrough", "Show a push that is not Kindly's as its own alert instead of exiting 1.")
    package static let state = Option<String>("--state", "PATH", "The state store (default: $XDG_STATE_HOME/kindly-push/state.sqlite3).")
    package static let noDedup = Flag("--no-dedup", "Show every push, also one shown before.")
    package static let dedupTTL = Option<String>(
        "--dedup-ttl", "DURATION", "Forget shown pushes after this long: N, Ns, Nm, Nh or Nd (default: 7d).")
    // decrypt's key options. Not the Redis worker's: notify reads standard input, a file or a
    // FIFO (it once listed --redis and ignored it).
    package static let keyFile = KeyringOptions.keyFile.taken
    package static let keyring = KeyringOptions.keyring.taken
    package static let senderKey = KeyringOptions.senderKey.taken
    // --jsonl and --verbose say more here.
    package static let jsonl = StreamOptions.jsonl.help(
        "Read one push per line and show each as its line arrives, for as long as the input is open.")
    package static let follow = Flag(
        "--follow",
        "Run as the desktop agent: read pushes from FILE (followed as tail -F does), a FIFO, or - (standard input), and own ai.kindly.Push1 on the session bus."
    )
    package static let verbose = KeyringOptions.verbose.help("Say on standard error which keyring is used and what became of each push.")
    package static let help = SharedOptions.help.taken

    let context: RouteContext
    let decryption: KindlyPushDecryption
    let options: DesktopPresenter.Options
    let isLineMode: Bool
    /// `--follow`: the live agent, on this source.
    let follow: FollowedInput.Source?
    let verbose: Bool
    let onOpen: String?
    let wait: Duration?
    let statePath: Result<String, DeduplicationError>
    let retention: Int64
    let environment: CommandEnvironment
    /// How long the store keeps what it showed without `--dedup-ttl`: 7 days.
    static let defaultRetention: Int64 = 7 * 86_400
}
