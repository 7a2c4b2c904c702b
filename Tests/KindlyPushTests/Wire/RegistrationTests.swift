import KindlyPush
import KindlyPushCore
import Testing

@Suite("Registration", .offThePool)
struct RegistrationTests {
    @Test("the registration object has section 6's fields, with the token in lowercase hex")
    func registrationJSON() throws {
        let key = DeviceKey.generate()
        let token = Registration.tokenHex([0x00, 0xAB, 0xFF, 0x10])
        #expect(token == "00abff10")
        let registration = Registration(token: token, pushMode: .alert, publicKey: key.publicKey)
        #expect(
            registration.json == [
                "token": "00abff10", "platform": "apns", "push_mode": "alert", "public_key": .string(key.publicKey.base64URL),
                "kid": .string(key.kid.base64URL), "sdk_version": "3.0.10",
            ])
    }

    @Test(
        "token strings are validated and lowercased",
        arguments: [("ABcd", "abcd"), ("abc", nil), ("", nil), ("zz", nil), ("a b ", nil), ("٠١", nil)])
    func tokenValidation(_ text: String, _ expected: String?) {
        #expect((try? Registration.tokenHex(validating: text)) == expected)
    }

    @Test(
        "the backend sends a visible push only to alert registrations on 3.0.10 or newer",
        arguments: [
            ("alert", "3.0.10", true), ("alert", "3.0.9", false), ("alert", "3.1", true), ("alert", "10.0.0", true),
            ("alert", "3.0.10.1", true),
            ("alert", "3.0", false), ("silent", "4.0.0", false), ("alert", "3.0.10-beta", false), ("alert", "", false),
            ("Alert", "3.0.10", false),
        ])
    func visibleOrSilent(_ mode: String, _ version: String, _ visible: Bool) {
        #expect(Registration.backendSendsVisiblePush(pushMode: mode, sdkVersion: version) == visible)
    }
}
