/// This KindlyPush release.
///
/// (Not `KindlyPushVersion`: `swift-symbolgraph-extract` drops a top-level name that starts with
/// the module's name and `Version`, the convention of framework version symbols, so it would be
/// missing from the API dump and the documentation.)
///
/// ```swift
/// logger.info("KindlyPush \(KindlyPushRelease.version)")
/// ```
public enum KindlyPushRelease {
    /// The version, `MAJOR.MINOR.PATCH` (semantic versioning, as CHANGELOG.md lists them).
    ///
    /// `kindly-push --version` prints it. It is not the iOS SDK version that a device reports to
    /// the backend at registration; that is `Registration.sdkVersion`.
    public static let version = "0.4.0"
}
