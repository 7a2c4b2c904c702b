internal import KindlyPushBase
internal import KindlyPushCore
package import KindlyPushLibcrypto

#if canImport(Glibc)
    import Glibc
#endif

/// The clock of the provider token and of `--expiration`: the system's, or for tests the Unix
/// time written in the file of `SendOptions.testClockVariable` (`KINDLY_PUSH_TEST_CLOCK_FILE`), read at every look.
package struct SendClock: Sendable {
    package let file: String?

    package init(file: String?) { self.file = file }

    /// Unix time in seconds.
    package func now() -> Int {
        if let file, let seconds = Self.read(file) { return seconds }
        return time(nil)
    }

    /// The seconds the clock file says; nil when it cannot be read or says no number.
    private static func read(_ path: String) -> Int? {
        guard let file = try? FileDescriptor.openForReading(path) else { return nil }
        defer { file.close() }
        guard let bytes = try? file.readAll(upTo: 32), !bytes.isEmpty, bytes.count <= 32 else { return nil }
        return Int(String(decoding: bytes, as: UTF8.self).trimmingASCIIWhitespace())
    }
}

extension String {
    fileprivate func trimmingASCIIWhitespace() -> String {
        let bytes = utf8.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }
        let trimmed = bytes.reversed().drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }
        return String(decoding: trimmed.reversed(), as: UTF8.self)
    }
}

/// The provider token of APNs's token-based authentication: a JWT whose header is
/// `{"alg":"ES256","kid":KEY_ID}` and whose claims are `{"iss":TEAM_ID,"iat":SECONDS}`, signed
/// with ES256 and written as base64url without padding.
///
/// APNs refuses a token older than an hour (403 `ExpiredProviderToken`) and one renewed more often
/// than every 20 minutes (429 `TooManyProviderTokenUpdates`), so the token is renewed when it is
/// ``refreshAge`` old, and once more when APNs calls it expired (``renew(replacing:)``).
package struct ProviderToken: Sendable {
    /// A token is renewed when it is this old: between APNs's 20 and 60 minutes.
    package static let refreshAge = 50 * 60
    /// APNs answers 429 `TooManyProviderTokenUpdates` to tokens renewed more often than this.
    package static let shortestRenewal = 20 * 60

    private let key: ES256Key
    private let keyID: String
    private let teamID: String
    package let clock: SendClock
    /// `authorization: bearer JWT`, the request header.
    package private(set) var header = ""
    /// The `iat` of the current token.
    package private(set) var issuedAt = 0
    /// Counts the tokens made: a refusal names the one it refused.
    package private(set) var generation = 0

    package init(key: ES256Key, keyID: String, teamID: String, clock: SendClock) throws(AuthKeyError) {
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.clock = clock
        try make()
    }

    /// Renews the token when it is ``refreshAge`` old.
    package mutating func refreshIfDue() throws(AuthKeyError) {
        if clock.now() - issuedAt >= Self.refreshAge { try make() }
    }

    /// APNs answered `ExpiredProviderToken` to a request that carried token `generation`: whether
    /// a newer token may carry it again. A later token already replaced the refused one (every
    /// request in flight with the old token gets the same answer: the token is renewed once), or
    /// the refused one is renewed now, unless it is younger than ``shortestRenewal``: APNs takes
    /// no faster renewal, and a token it calls expired that young means a clock that is off (the
    /// host's or APNs's), which a new token would not mend; the push keeps its 403.
    package mutating func renew(replacing generation: Int) throws(AuthKeyError) -> Bool {
        guard generation == self.generation else { return true }
        guard clock.now() - issuedAt >= Self.shortestRenewal else { return false }
        try make()
        return true
    }

    private mutating func make() throws(AuthKeyError) {
        let now = clock.now()
        let claims: JSONValue = ["iss": .string(teamID), "iat": .number(JSONNumber(now))]
        let token: String
        do throws(LibcryptoError) {
            token = try key.jwt(headerMembers: [.init(key: "kid", value: .string(keyID))], claims: claims)
        } catch {
            throw AuthKeyError("the auth key cannot sign: \(error)")
        }
        self.header = "authorization: bearer " + token
        issuedAt = now
        generation += 1
    }
}
