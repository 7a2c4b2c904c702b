import Foundation
import KindlyPush

/// What the gateway did with one push, for its logs and metrics.
public struct GatewayOutcome: Codable, Sendable, Equatable {
    /// The display decision, as `kindly-push route` prints it.
    public var decision: RouteDecision
    /// The failure, when the push did not decrypt.
    public var failure: DecryptionFailure?
    /// Whether asking again later may succeed (a locked or unreachable keyring).
    public var retryLater: Bool
}

/// A small service on the public API only: decrypt with reasons, apply, route, seal.
public struct PushGateway: Sendable {
    public let decryption: KindlyPushDecryption

    /// A gateway over any keyring: a key file in production, a test double in tests.
    public init(keyring: any Keyring) {
        decryption = KindlyPushDecryption(keyring: keyring)
    }

    /// A gateway that reads its one device key from a 0600 key file.
    public init(keyFile path: String) throws {
        self.init(keyring: try KeyFileKeyring(path: path))
    }

    /// Decides what a foreground app shows for `push` (the bytes APNs delivered).
    public func handle(_ push: Data, appState: DisplayRules.AppState = .foreground) -> GatewayOutcome {
        let decision = KindlyPushRouter.route(
            userInfo: push, context: RouteContext(appState: appState), decryption: decryption)
        let failure: DecryptionFailure?
        if case .failure(let error) = decryption.decryptResult(userInfo: push) { failure = error } else { failure = nil }
        return GatewayOutcome(decision: decision, failure: failure, retryLater: failure?.keyringError?.isTransient ?? false)
    }

    /// The push rewritten for display, as the notification service extension rewrites it.
    public func rewrite(_ userInfo: [AnyHashable: Any]) -> [AnyHashable: Any]? {
        guard let payload = decryption.decrypt(userInfo: userInfo) else { return nil }
        return KindlyPushDecryption.apply(payload, toUserInfo: userInfo)
    }

    /// The backend side: seals a message for a device.
    public static func seal(
        chatId: String, title: String, body: String, for recipient: DevicePublicKey
    ) throws -> Data {
        let payload = try DecryptedPayload(chatId: chatId, title: title, body: body)
        return Data(try KindlyPushSealer.seal(payload, for: recipient))
    }
}
