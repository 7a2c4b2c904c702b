public import FoundationEssentials
internal import KindlyPushCore

// The iOS SDK's names, for code ported from it: documented aliases of the primary forms.

extension KindlyPushDecryption {
    /// The decrypted payload type, under the name the iOS SDK nests it.
    public typealias DecryptedPayload = KindlyPush.DecryptedPayload

    /// Where keys live by default in this process: the keyring that ``standard``, the static
    /// `decrypt(userInfo:)` and ``KindlyNotificationService/init()`` use.
    ///
    /// Set it once, when the app starts, before the first push. Unset (`nil`), it is the file
    /// keyring in its default folder (`$KINDLY_PUSH_KEYRING_DIR`, else
    /// `$XDG_DATA_HOME/kindly-push/keys`, else `~/.local/share/kindly-push/keys`), read from the
    /// process environment at each use; with no home folder at all, a keyring that holds no keys
    /// (every push is `key_unavailable`).
    ///
    /// The one rule for the default, the library's and the command's: `kindly-push keygen` with
    /// `--keyring auto` (its default) stores the key in the Secret Service when a session bus
    /// offers it, and in the file keyring otherwise. A host that links the
    /// `KindlyPushSecretService` product applies the same rule with one line,
    /// `KindlyPushDecryption.defaultKeyring = SecretServiceKeyring.automatic()`, and then finds
    /// the command's key wherever the command put it. `KindlyPush` alone cannot reach the Secret
    /// Service (it builds without libsecret), so its default is the file keyring; a host that
    /// stays with it registers keys with `kindly-push keygen --keyring file`.
    public static var defaultKeyring: (any Keyring)? {
        get { processDefaultKeyring.withLock { $0 } }
        set { processDefaultKeyring.withLock { $0 = newValue } }
    }

    private static let processDefaultKeyring = Locked<(any Keyring)?>(nil)

    /// Decryption with the process's default keyring, as the iOS SDK's static form uses the
    /// keychain: ``defaultKeyring`` when the host set one, else the file keyring in its default
    /// folder (see ``defaultKeyring``), read when called.
    public static var standard: KindlyPushDecryption {
        if let keyring = defaultKeyring { return KindlyPushDecryption(keyring: keyring) }
        guard let folder = try? FileKeyring.defaultFolder(environment: ProcessInfo.processInfo.environment) else {
            return KindlyPushDecryption(keyring: InMemoryKeyring())
        }
        return KindlyPushDecryption(keyring: FileKeyring(folder: folder))
    }

    /// The iOS SDK's static `decrypt(userInfo:)`: decrypts with ``standard``'s keyring (the
    /// process's ``defaultKeyring``); `nil` on any failure. Services that hold their keys
    /// elsewhere make a `KindlyPushDecryption(keyring:)`.
    public static func decrypt(userInfo: [AnyHashable: Any]) -> DecryptedPayload? {
        standard.decrypt(userInfo: userInfo)
    }

    /// The static `decrypt(userInfo:)` for a ``NotificationContent/userInfo``, as the iOS SDK's
    /// `decrypt(userInfo: content.userInfo)` is called: decrypts with ``standard``'s keyring.
    public static func decrypt(userInfo: JSONObject) -> DecryptedPayload? {
        standard.decrypt(userInfo: userInfo)
    }

    /// ``isDecrypted(userInfo:)-(JSONValue)``, unlabeled as in the iOS SDK.
    public static func isDecrypted(_ userInfo: JSONValue) -> Bool {
        isDecrypted(userInfo: userInfo)
    }

    /// ``isDecrypted(userInfo:)-(JSONObject)`` for a ``NotificationContent/userInfo``,
    /// unlabeled as the iOS SDK's `isDecrypted(content.userInfo)` is called.
    public static func isDecrypted(_ userInfo: JSONObject) -> Bool {
        isDecrypted(userInfo: userInfo)
    }

    /// ``isDecrypted(userInfo:)-(Data)``, unlabeled as in the iOS SDK.
    public static func isDecrypted(_ userInfo: Data) -> Bool {
        isDecrypted(userInfo: userInfo)
    }

    /// ``isDecrypted(userInfo:)-([AnyHashable:Any])``, unlabeled as in the iOS SDK.
    public static func isDecrypted(_ userInfo: [AnyHashable: Any]) -> Bool {
        isDecrypted(userInfo: userInfo)
    }
}
