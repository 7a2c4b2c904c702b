internal import CSodium

extension Sodium {
    /// The version of the libsodium the process runs with (`sodium_version_string`).
    package static var runtimeVersion: String { String(cString: sodium_version_string()) }

    /// The version of libsodium's headers the package was built with.
    package static let headerVersion = SODIUM_VERSION_STRING
}
