import Foundation
import KindlyPush
import KindlyPushCore
import Testing

@Suite("Notification mode and registration")
struct KindlyNotificationModeTests {
    static let key = DeviceKey.generate()

    @Test(
        "The mode sets push_mode: alert and silent as named, automatic by the extension",
        arguments: [
            (KindlyNotificationMode.alert, false, Registration.PushMode.alert),
            (.alert, true, .alert),
            (.silent, false, .silent),
            (.silent, true, .silent),
            (.automatic, true, .alert),
            (.automatic, false, .silent),
        ])
    func pushMode(mode: KindlyNotificationMode, extensionPresent: Bool, expected: Registration.PushMode) throws {
        let asked = Locked(0)
        let detector = NotificationServiceExtensionDetector {
            asked.withLock { $0 += 1 }
            return extensionPresent
        }
        let registration = Registration(deviceToken: [0xAB, 0x01], mode: mode, detector: detector, publicKey: Self.key.publicKey)
        #expect(registration.pushMode == expected)
        #expect(registration.json.objectValue?["push_mode"] == .string(expected.rawValue))
        // Only automatic mode looks for the extension.
        #expect(asked.withLock { $0 } == (mode == .automatic ? 1 : 0))
    }

    @Test("A token given as bytes is written as lowercase hex")
    func tokenBytes() {
        let registration = Registration(
            deviceToken: [0x00, 0xAB, 0xCD, 0xEF, 0x10], mode: .alert, detector: .absent, publicKey: Self.key.publicKey)
        #expect(registration.token == "00abcdef10")
        #expect(registration.json.objectValue?.keys == ["token", "platform", "push_mode", "public_key", "kid", "sdk_version"])
    }

    @Test("A token given as text is checked and lowercased")
    func tokenText() throws {
        let registration = try Registration(
            deviceTokenHex: "00ABcdEF", mode: .silent, detector: .present, publicKey: Self.key.publicKey)
        #expect(registration.token == "00abcdef")
        #expect(registration.pushMode == .silent)
    }

    @Test("A token that is not an even number of hex digits is refused", arguments: ["", "abc", "0g", "ab cd", "éé", "0x12"])
    func badToken(text: String) {
        #expect(throws: Registration.InvalidToken.self) {
            try Registration(deviceTokenHex: text, mode: .alert, detector: .absent, publicKey: Self.key.publicKey)
        }
    }

    static func infoPlist(extensionPoint: String, marker: Bool?) -> String {
        let markerLine = marker.map { "<key>KindlyPushNotificationService</key><\($0 ? "true" : "false")/>" } ?? ""
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>
            <key>CFBundleIdentifier</key><string>com.example.app.service</string>
            \(markerLine)
            <key>NSExtension</key><dict>
            <key>NSExtensionPointIdentifier</key><string>\(extensionPoint)</string>
            <key>NSExtensionPrincipalClass</key><string>NotificationService</string>
            </dict></dict></plist>
            """
    }

    @Test(
        "Automatic mode finds a notification service extension built on the library in the app bundle",
        arguments: [
            ("com.apple.usernotifications.service", true as Bool?, true),
            ("com.apple.usernotifications.service", false, false),
            ("com.apple.usernotifications.service", nil, false),
            ("com.apple.widgetkit-extension", true, false),
        ])
    func bundleDetection(extensionPoint: String, marker: Bool?, expected: Bool) throws {
        let bundle = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-app-\(UUID().uuidString).app")
        defer { try? FileManager.default.removeItem(at: bundle) }
        let appex = bundle.appendingPathComponent("PlugIns/Service.appex")
        try FileManager.default.createDirectory(at: appex, withIntermediateDirectories: true)
        try Data(Self.infoPlist(extensionPoint: extensionPoint, marker: marker).utf8).write(to: appex.appendingPathComponent("Info.plist"))
        let detector = NotificationServiceExtensionDetector.appBundle(at: bundle.path)
        #expect(detector.isPresent() == expected)
        #expect(KindlyNotificationMode.automatic.pushMode(detector: detector) == (expected ? .alert : .silent))
    }

    @Test("An app bundle without PlugIns has no extension")
    func noPlugIns() {
        #expect(!NotificationServiceExtensionDetector.appBundle(at: "/nonexistent/kindly.app").isPresent())
    }
}
