public import FoundationEssentials
internal import KindlyPushCore

// The iOS SDK's names, for code ported from it: documented aliases of the primary forms.

extension KindlyPushDecryption {
    /// The decrypted payload type, under the name the iOS SDK nests it.
    public typealias DecryptedPayload = KindlyPush.DecryptedPayload

    /// Decryption with the platform's default keyring, as the iOS SDK's static form uses the
    /// keychain: the file keyring in its default folder (`$KINDLY_PUSH_KEYRING_DIR`, else
    /// `$XDG_DATA_HOME/kindly-push/keys`, else `~/.local/share/kindly-push/keys`), read from the
    /// process environment when called (`~` is the password database's home when `HOME` is
    /// unset). With no home folder at all it holds no keys: every push is `key_unavailable`.
    public static var standard: KindlyPushDecryption {
        guard let folder = try? FileKeyring.defaultFolder(environment: ProcessInfo.processInfo.environment) else {
            return KindlyPushDecryption(keyring: InMemoryKeyring())
        }
        return KindlyPushDecryption(keyring: FileKeyring(folder: folder))
    }

    /// The iOS SDK's static `decrypt(userInfo:)`: decrypts with ``standard``'s keyring; `nil` on
    /// any failure. Services that hold their keys elsewhere make a `KindlyPushDecryption(keyring:)`.
    public static func decrypt(userInfo: [AnyHashable: Any]) -> DecryptedPayload? {
        standard.decrypt(userInfo: userInfo)
    }

    /// ``isDecrypted(userInfo:)-(JSONValue)``, unlabeled as in the iOS SDK.
    public static func isDecrypted(_ userInfo: JSONValue) -> Bool {
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
