import Foundation
import KindlyPushCore
import KindlyPushDesktop
import KindlyPushSecretService
import KindlyPushSend
import KindlyPushWebPush
import Testing

@testable import KindlyPushBase
@testable import KindlyPushCLI
@testable import KindlyPushCLIDesktop
@testable import KindlyPushRedis

/// The figures that the code defines and the documentation states (the rule: "no figure that the
/// code defines is restated in prose unless the test command checks it"). Each phrase is built
/// from the constant the code uses, so that a changed constant fails here until its prose is
/// changed too. Line breaks and runs of spaces in the documents count as one space.
@Suite("figures the documentation states are the code's", .offThePool)
struct DocumentedFiguresTests {
    /// `3 s`, `1.5 s`, `0.5 s`.
    static func seconds(_ duration: Duration) -> String {
        let (whole, fraction) = duration.components
        guard fraction != 0 else { return "\(whole) s" }
        let tenths = (Double(whole) + Double(fraction) / 1e18) * 10
        return "\(Int(tenths.rounded()) / 10).\(Int(tenths.rounded()) % 10) s"
    }

    static func seconds(milliseconds: Int) -> String { seconds(.milliseconds(milliseconds)) }

    /// `64 KiB`, `1 MiB`.
    static func bytes(_ count: Int) -> String {
        count % (1 << 20) == 0 ? "\(count >> 20) MiB" : count % 1024 == 0 ? "\(count >> 10) KiB" : "\(count) bytes"
    }

    /// `1,024`.
    static func number(_ value: Int) -> String {
        let digits = String(value)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return out
    }

    static func words(_ value: Int) -> String {
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"][value]
    }

    static let facts: [(file: String, phrase: String)] = {
        let budget = seconds(SecretServiceKeyring.defaultTimeout)
        let probe = seconds(SecretServiceKeyring.defaultProbeTimeout)
        let check = seconds(CachingKeyring.defaultChangeCheckInterval)
        let input = bytes(WireFormat.maximumInputSize)
        let tap = KindlyNotificationHandler.tapReplayWindow.components.seconds
        return [
            ("docs/stream-engine.md", "(\(number(StreamBatching.batchLines * 2)) pushes or \(bytes(StreamBatching.batchBytes * 2)))"),
            (
                "docs/stream-engine.md",
                "at most \(words(StreamBatching.batchesInFlight)) batches of \(StreamBatching.batchLines) lines (or \(bytes(StreamBatching.batchBytes)))"
            ),
            ("docs/stream-engine.md", "over \(input)"),
            ("docs/hardening.md", "at most \(bytes(VerifyCommand.maximumFileSize)) per file"),
            ("docs/hardening.md", "at most \(KeyringLabel.maximumLength) characters"),
            ("docs/hardening.md", "failed look-up of a kid for \(seconds(CachingKeyring.defaultFailureLifetime))"),
            ("docs/hardening.md", "at once for \(seconds(CachingKeyring.defaultRetryInterval)), then tries once more"),
            ("docs/hardening.md", "one time budget (\(budget)) per stream"),
            ("docs/hardening.md", "take about \(budget) instead of \(Int(SecretServiceKeyring.defaultTimeout * 8 / .seconds(1)))"),
            ("docs/hardening.md", "does not answer within \(probe) is an `io` error"),
            ("docs/hardening.md", "at most every \(check), on the first push"),
            ("docs/hardening.md", "the first push that arrives \(check) or more after"),
            ("docs/hardening.md", "the first check is \(check) after the start"),
            ("docs/notify.md", "waits up to \(seconds(NotifySession.childrenGracePeriod)) for such commands"),
            ("docs/notify.md", "has a \(seconds(DesktopNotifier.defaultTimeout)) budget"),
            ("docs/notify.md", "is `io` after \(seconds(DesktopNotifier.defaultTimeout))"),
            ("docs/operating.md", "is `key_unavailable` within \(budget)"),
            ("docs/operating.md", "within the keyring's \(budget) budget"),
            ("docs/operating.md", "spends at most \(seconds(DoctorContext.busBudget)) on the bus"),
            ("docs/operating.md", "costs the probe's \(probe)"),
            ("docs/operating.md", "the TTL, \(NotifyCommand.defaultRetention / 86_400) days by default"),
            ("docs/running-at-scale.md", "\(input), \(bytes(StandardInput.fitDocumentSize)) for `seal --fit`"),
            (
                "docs/running-at-scale.md",
                "backoff from \(seconds(milliseconds: RedisTiming.firstRetryDelay)) doubling to \(seconds(milliseconds: RedisTiming.longestRetryDelay))"
            ),
            (
                "docs/running-at-scale.md",
                "(\(seconds(milliseconds: RedisTiming.connectTimeout)), and the read's block time + \(seconds(milliseconds: RedisTiming.commandMargin)))"
            ),
            ("docs/running-at-scale.md", "the default \(seconds(milliseconds: RedisOptions.defaultClaimIdle))"),
            ("docs/running-at-scale.md", "(`XAUTOCLAIM`) | \(RedisOptions.defaultClaimIdle) |"),
            ("docs/running-at-scale.md", "committed at a time | \(RedisOptions.defaultBatch) |"),
            ("docs/running-at-scale.md", "error object and acknowledged | \(RedisOptions.defaultMaxDeliveries) |"),
            (
                "docs/running-at-scale.md",
                "(\(seconds(milliseconds: SendTiming.firstRetryDelay)) doubling to \(seconds(milliseconds: SendTiming.longestRetryDelay)), each delay drawn between its half and its whole), \(SendTiming.serverAttempts) attempts in all"
            ),
            ("docs/running-at-scale.md", "what was in flight (\(SendTiming.transportAttempts) attempts, the same backoff)"),
            ("docs/running-at-scale.md", "reads at most \(number(SendTiming.readAhead)) lines ahead"),
            ("docs/running-at-scale.md", "The token is renewed after \(ProviderToken.refreshAge / 60) minutes"),
            ("docs/running-at-scale.md", "whose push is over \(APNsPush.maximumPayloadSize) bytes"),
            ("docs/running-at-scale.md", "(its document, compact; at most \(WebPushPush.maximumPayloadSize) bytes"),
            ("docs/running-at-scale.md", "`--expiration`; else \(WebPushHeaders.defaultTTL))"),
            ("docs/running-at-scale.md", "the push (at most \(FCMPush.maximumPayloadSize) bytes)"),
            (
                "docs/running-at-scale.md",
                "(APNs \(APNsPush.maximumPayloadSize) bytes, FCM \(FCMPush.maximumPayloadSize), Web Push \(WebPushPush.maximumPayloadSize);"
            ),
            (
                "docs/command.md",
                "APNs \(APNsPush.maximumPayloadSize) bytes, FCM \(FCMPush.maximumPayloadSize), Web Push \(WebPushPush.maximumPayloadSize) (sections"
            ),
            ("docs/command.md", "(FCM: 1 to \(FCMPush.maximumTokenSize) printable bytes)"),
            ("docs/hardening.md", "its push at most \(APNsPush.maximumPayloadSize) bytes compact"),
            ("docs/hardening.md", "a token of 16 to \(APNsPush.maximumTokenLength) hex digits"),
            ("docs/hardening.md", "an `fcm_token` of 1 to \(FCMPush.maximumTokenSize) printable bytes"),
            ("docs/hardening.md", "a Web Push `endpoint` of at most \(WebPushPush.maximumEndpointSize) printable bytes"),
            ("docs/hardening.md", "a `collapse_id` of 1 to \(APNsPush.maximumCollapseIDSize) printable bytes"),
            ("docs/hardening.md", "an APNs answer kept up to \(bytes(SendTiming.maximumResponseSize))"),
            ("docs/hardening.md", "at most \(number(SendTiming.readAhead)) lines read ahead"),
            ("docs/hardening.md", "once in \(ProviderToken.refreshAge / 60) minutes"),
            ("docs/desktop.md", "over \(input)"),
            ("docs/desktop.md", "at most \(tap) s before is replayed"),
            ("docs/desktop.md", "within \(tap) s and is in the foreground"),
            ("docs/spec/streams.md", "A line over \(input) is"),
            ("docs/spec/streams.md", "or over \(input);"),
            ("docs/spec/streams.md", "would exceed \(number(WireFormat.maximumPayloadSize)) bytes"),
            ("docs/spec/display-rules.md", "within \(tap) seconds of the tap"),
            ("Sources/KindlyPush/KindlyPush.docc/GettingStarted.md", "taps replayed within \(tap) s of a launch"),
            ("Sources/KindlyPush/KindlyPush.docc/PortingFromIOS.md", "older than \(tap) seconds"),
        ]
    }()

    @Test("each documented figure is the code's constant", arguments: facts.indices)
    func figure(index: Int) throws {
        let (file, phrase) = Self.facts[index]
        let text = try String(contentsOf: CLI.packageRoot.appendingPathComponent(file), encoding: .utf8)
        let flat = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
        #expect(flat.contains(phrase), "\(file) should say \"\(phrase)\"")
    }
}
