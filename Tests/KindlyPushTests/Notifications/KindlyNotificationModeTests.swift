import Foundation
import KindlyPush
import KindlyPushCore
import Testing

@Suite("Notification mode and registration", .offThePool)
struct KindlyNotificationModeTests {
    static let key = DeviceKey.generate()

    @Test(
        "The mode sets push_mode: alert and silent as named, automatic by the host's declared decrypting presenter",
        arguments: [
            (KindlyNotificationMode.alert, false, Registration.PushMode.alert),
            (.alert, true, .alert),
            (.silent, false, .silent),
            (.silent, true, .silent),
            (.automatic, true, .alert),
            (.automatic, false, .silent),
        ])
    func pushMode(mode: KindlyNotificationMode, declared: Bool, expected: Registration.PushMode) throws {
        let registration = Registration(
            deviceToken: [0xAB, 0x01], mode: mode, hasDecryptingPresenter: declared, publicKey: Self.key.publicKey)
        #expect(registration.pushMode == expected)
        #expect(registration.json.objectValue?["push_mode"] == .string(expected.rawValue))
    }

    @Test("A token given as bytes is written as lowercase hex")
    func tokenBytes() {
        let registration = Registration(
            deviceToken: [0x00, 0xAB, 0xCD, 0xEF, 0x10], mode: .alert, hasDecryptingPresenter: false, publicKey: Self.key.publicKey)
        #expect(registration.token == "00abcdef10")
        #expect(registration.json.objectValue?.keys == ["token", "platform", "push_mode", "public_key", "kid", "sdk_version"])
    }

    @Test("A token given as text is checked and lowercased")
    func tokenText() throws {
        let registration = try Registration(
            deviceTokenHex: "00ABcdEF", mode: .silent, hasDecryptingPresenter: true, publicKey: Self.key.publicKey)
        #expect(registration.token == "00abcdef")
        #expect(registration.pushMode == .silent)
    }

    @Test("A token that is not an even number of hex digits is refused", arguments: ["", "abc", "0g", "ab cd", "éé", "0x12"])
    func badToken(text: String) {
        #expect(throws: Registration.InvalidToken.self) {
            try Registration(deviceTokenHex: text, mode: .alert, hasDecryptingPresenter: false, publicKey: Self.key.publicKey)
        }
    }
}
