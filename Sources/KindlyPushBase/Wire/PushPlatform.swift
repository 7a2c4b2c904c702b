/// The transports a Kindly push goes through (wire-format section 9) and what each allows the
/// document: `seal --recipients-inline` seals for the platform a line's registration names and
/// `send` checks each line against the same budget.
package enum PushPlatform: String, Sendable, Hashable, CaseIterable {
    case apns
    case fcm
    case webPush = "webpush"

    /// The APNs budget (section 9.2): Apple's 4096 bytes for the request body.
    package static let apnsMaximumPayloadSize = WireFormat.maximumPayloadSize
    /// The FCM budget (section 9.3): FCM's 4000 bytes of data less the key `kindly_push`.
    package static let fcmMaximumPayloadSize = 4000 - "kindly_push".utf8.count
    /// The Web Push budget (section 9.4): a 4096-byte encrypted body less RFC 8291's 86-byte
    /// header (salt, record size, key id length and the 65-byte key id), the 16-byte tag and the
    /// padding delimiter.
    package static let webPushMaximumPayloadSize = 4096 - 86 - 16 - 1

    /// The longest FCM registration token taken, in bytes (printable ASCII).
    package static let maximumFCMTokenSize = 4096
    /// The longest Web Push endpoint taken, in bytes.
    package static let maximumEndpointSize = 2048

    /// The longest document (the compact push) this platform carries.
    package var maximumPayloadSize: Int {
        switch self {
        case .apns: Self.apnsMaximumPayloadSize
        case .fcm: Self.fcmMaximumPayloadSize
        case .webPush: Self.webPushMaximumPayloadSize
        }
    }

    /// Whose budget, in a message: "APNs'", "FCM's", "Web Push's".
    package var possessive: String {
        switch self {
        case .apns: "APNs'"
        case .fcm: "FCM's"
        case .webPush: "Web Push's"
        }
    }

    /// Whether `token` may be an FCM registration token: 1 to ``maximumFCMTokenSize`` printable
    /// ASCII bytes (no space).
    package static func isFCMToken(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= maximumFCMTokenSize && token.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    /// Whether `endpoint` may be a Web Push endpoint: an `https://` URL of printable ASCII with
    /// no fragment, at most ``maximumEndpointSize`` bytes (its host is checked where it is used).
    package static func isEndpoint(_ endpoint: String) -> Bool {
        endpoint.utf8.count <= maximumEndpointSize && endpoint.utf8.starts(with: "https://".utf8)
            && endpoint.utf8.count > "https://".utf8.count
            && endpoint.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") }
    }
}

extension KindlyPushSealer.SealingError {
    /// The error's message for a push sealed for `platform`: a push too large is measured
    /// against that platform's budget.
    package func description(for platform: PushPlatform) -> String {
        guard case .payloadTooLarge(let size) = self, platform != .apns else { return description }
        return "the sealed payload would be \(size) bytes, over \(platform.possessive) limit of \(platform.maximumPayloadSize)"
    }
}
