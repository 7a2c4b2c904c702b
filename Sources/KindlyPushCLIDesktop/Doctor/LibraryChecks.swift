internal import KindlyPush
internal import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushSecretService

/// The versions of the C libraries underneath.
enum LibraryChecks {
    /// The oldest libsodium with everything the wire format uses (`sodium_pad`, 1.0.14).
    static let minimumSodium = [1, 0, 14]

    /// `libsodium`: the version the process runs with (`sodium_version_string`), against the one
    /// it was built with.
    static func libsodium(_ context: DoctorContext) -> [DoctorCheck] {
        let running = Sodium.runtimeVersion
        let built = Sodium.headerVersion
        let details: [JSONObject.Member] = [
            .init(key: "version", value: .string(running)), .init(key: "built_with", value: .string(built)),
        ]
        let parts = running.split(separator: ".").map { Int($0) ?? 0 }
        if parts.lexicographicallyPrecedes(minimumSodium) {
            return [
                DoctorCheck(
                    "libsodium", .problem, "\(running) is older than 1.0.14, which sodium_pad needs",
                    action: "install a current libsodium (Debian: libsodium23)", details: details)
            ]
        }
        if running != built {
            return [
                DoctorCheck(
                    "libsodium", .warning, "\(running) at run time, but built with \(built)",
                    action: "rebuild against the installed libsodium (swift build)", details: details)
            ]
        }
        return [DoctorCheck("libsodium", .ok, running, details: details)]
    }

    /// `libsecret`: the version of the headers it was built with (libsecret 0.20 has no call
    /// that says its version at run time).
    static func libsecret(_ context: DoctorContext) -> [DoctorCheck] {
        let version = SecretServiceKeyring.libsecretVersion
        return [
            DoctorCheck(
                "libsecret", .ok, "\(version) (built with; libsecret reports no version at run time)",
                details: [.init(key: "version", value: .string(version))])
        ]
    }
}
