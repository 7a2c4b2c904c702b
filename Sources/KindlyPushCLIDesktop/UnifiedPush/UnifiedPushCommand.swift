internal import KindlyPushBase
package import KindlyPushCLI
internal import KindlyPushCore

/// `kindly-push unifiedpush register|unregister`: the desktop's UnifiedPush registration
/// (docs/spec/wire-format.md sections 9.1 and 9.4). Declared and run in `kindly-push-desktop`
/// (GIO); every other binary hands it there. Its run is in UnifiedPushCommand+Run.swift.
package struct UnifiedPushCommand: RunnableCommand {
    package static let discussion = """
        register makes the device's Web Push keys (a P-256 key
        pair and a 16-byte auth secret; kept beside the device
        key, in the Secret Service or the file keyring, 0600,
        never printed), registers ai.kindly.Push with the
        session bus's UnifiedPush distributor (Distributor2),
        waits up to 10 s for its endpoint (NewEndpoint) and
        prints the registration JSON: platform webpush, the
        subscription (endpoint, p256dh, auth) and the newest
        device key. Registering again keeps the keys and the
        token. With --vapid, the distributor is given the
        backend's VAPID public key (vapid-keygen's), and its push
        service takes only pushes that key signs. With no
        distributor, or several and no --distributor, it exits
        74 (io) or 64 (usage).
        The desktop agent (notify --follow) serves
        org.unifiedpush.Connector2 as ai.kindly.Push and shows
        each message as a followed line. unregister ends the
        registration and forgets the keys.
        """
    package static let name = "unifiedpush"
    package static let abstract = "Register this desktop with a UnifiedPush distributor, or end it."
    package static let arguments = ["register", "unregister"]
    package static let examples = [
        Example("Register and print the Web Push registration", "kindly-push unifiedpush register"),
        Example("End the registration and forget its keys", "kindly-push unifiedpush unregister"),
    ]
    package static let distributor = Option<String>(
        "--distributor", "NAME", "The distributor's bus name (default: the one on the bus)."
    ).only("register")
    package static let vapid = Option<String>(
        "--vapid", "KEY", "The backend's VAPID public key (vapid-keygen)."
    ).only("register")
    package static let keyring = KeyringOptions.keyring.taken
    package static let verbose = KeyringOptions.verbose.taken
    package static let help = SharedOptions.help.taken

    let action: Action
    let keyring: KeyringOptions
    let environment: CommandEnvironment
}
