internal import KindlyPushCore

extension Keyring {
    /// The device key to register: the newest stored key, or, only when the keyring holds none,
    /// a new key stored under `label`.
    ///
    /// Registering again (a new APNs token, an app update) must not rotate the key: pushes
    /// already sealed for the stored key would no longer decrypt.
    ///
    /// - Returns: the key, and whether it was created now.
    package func newestKeyOrNew(label: String) throws(KeyringError) -> (key: DeviceKey, created: Bool) {
        if let newest = try list().max() {
            return (try key(for: newest.kid), false)
        }
        let key = DeviceKey.generate()
        try store(key, label: label)
        return (key, true)
    }
}
