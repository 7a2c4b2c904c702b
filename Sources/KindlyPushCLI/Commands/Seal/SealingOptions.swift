package import KindlyPushBase

/// The options of `seal` that say for whom and how to seal, declared once for both ways of
/// sealing (one recipient, and `--recipients-inline`); the group reads itself from the arguments.
package struct SealingOptions: Sendable {
    /// The group's options, in the order help lists them.
    package struct Keys: OptionGroup {
        package let publicKey = Option<String>("--public-key", "B64", "The device's public key (base64url or base64).")
        package let keyFile = KeyringOptions.keys.keyFile.help("Seal for the device whose key file this is (its public key is read).")
        package let senderKeyFile = Option<String>(
            "--sender-key-file", "PATH",
            "Seal with this sender key file (sender-keygen writes one): version 2, or with --wire 3 HPKE mode_auth; default: version 1.")
        package let wire = Option<WireVersion>(
            "--wire", "N", "The wire format version: 1, 2 (needs --sender-key-file) or 3 (HPKE); default: 2 with a sender key, 1 without.",
            choices: WireVersion.allCases.map(\.description)
        ) { Int($0).flatMap(WireVersion.init(rawValue:)) }
        package let mode = Option<KindlyPushSealer.Mode>("--mode", "MODE", "visible (default) or silent.")
        package let placeholderTitle = Option<String>(
            "--placeholder-title", "T", "The visible push's generic alert title (default: \"New message\").")
        package let placeholderBody = Option<String>(
            "--placeholder-body", "B", "The visible push's generic alert body (default: \"Open the app to read it\").")
        package let fit = Flag(
            "--fit", "Cut a body too long for APNs to the longest prefix that fits, ended with \"…\" and marked \"truncated\": true.")
        package let recipientsInline = Flag(
            "--recipients-inline",
            "Read {\"public_key\", \"plaintext\"} objects, each sealed for its own device (with --jsonl: one per line).")
    }
    package static let keys = Keys()

    /// `--public-key B64`, as given.
    package let publicKey: String?
    /// `--key-file PATH`: the recipient's key file.
    package let keyFile: String?
    /// `--sender-key-file PATH`.
    package let senderKeyFile: String?
    /// `--wire N`; nil for the default of ``PlaintextSealing/wireVersion(_:hasSender:)``.
    package let wire: WireVersion?
    /// `--mode`; nil for visible.
    package let mode: KindlyPushSealer.Mode?
    package let placeholderTitle: String?
    package let placeholderBody: String?
    /// `--fit`.
    package let fits: Bool
    /// `--recipients-inline`.
    package let isRecipientsInline: Bool

    package init(_ arguments: ParsedArguments) {
        publicKey = arguments[Self.keys.publicKey]
        keyFile = arguments[Self.keys.keyFile]
        senderKeyFile = arguments[Self.keys.senderKeyFile]
        wire = arguments[Self.keys.wire]
        mode = arguments[Self.keys.mode]
        placeholderTitle = arguments[Self.keys.placeholderTitle]
        placeholderBody = arguments[Self.keys.placeholderBody]
        fits = arguments[Self.keys.fit]
        isRecipientsInline = arguments[Self.keys.recipientsInline]
    }
}
