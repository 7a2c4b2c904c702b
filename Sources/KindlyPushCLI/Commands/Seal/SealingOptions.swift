package import KindlyPushBase

/// The options of `seal` that say for whom and how to seal, declared once for both ways of
/// sealing (one recipient, and `--recipients-inline`); the group reads itself from the arguments.
package struct SealingOptions: Sendable {
    package static let publicKey = Option<String>("--public-key", "B64", "The device's public key (base64url or base64).")
    package static let keyFile = KeyringOptions.keyFile.help("Seal for the device whose key file this is (its public key is read).")
    package static let senderKeyFile = Option<String>(
        "--sender-key-file", "PATH",
        "Seal with this sender key file (sender-keygen writes one): version 2, or with --wire 3 HPKE mode_auth; default: version 1.")
    package static let wire = Option<WireVersion>(
        "--wire", "N", "The wire format version: 1, 2 (needs --sender-key-file) or 3 (HPKE); default: 2 with a sender key, 1 without.",
        choices: WireVersion.allCases.map(\.description)
    ) { Int($0).flatMap(WireVersion.init(rawValue:)) }
    package static let mode = Option<KindlyPushSealer.Mode>("--mode", "MODE", "visible (default) or silent.")
    package static let placeholderTitle = Option<String>(
        "--placeholder-title", "T", "The visible push's generic alert title (default: \"New message\").")
    package static let placeholderBody = Option<String>(
        "--placeholder-body", "B", "The visible push's generic alert body (default: \"Open the app to read it\").")
    package static let fit = Flag(
        "--fit", "Cut a body too long for APNs to the longest prefix that fits, ended with \"…\" and marked \"truncated\": true.")
    package static let recipientsInline = Flag(
        "--recipients-inline", "Read {\"public_key\", \"plaintext\"} objects, each sealed for its own device (with --jsonl: one per line).")

    /// The group's options, in the order help lists them.

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
        publicKey = arguments[Self.publicKey]
        keyFile = arguments[Self.keyFile]
        senderKeyFile = arguments[Self.senderKeyFile]
        wire = arguments[Self.wire]
        mode = arguments[Self.mode]
        placeholderTitle = arguments[Self.placeholderTitle]
        placeholderBody = arguments[Self.placeholderBody]
        fits = arguments[Self.fit]
        isRecipientsInline = arguments[Self.recipientsInline]
    }
}
