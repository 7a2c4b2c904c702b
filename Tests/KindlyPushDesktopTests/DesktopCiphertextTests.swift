import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushDesktop
import KindlyPushTesting
import KindlyPushVectors
import Testing

/// The agent's row of "ciphertext is never shown": what `notify` would post for every vector
/// (its presenter's plan: the banner, the placeholder, a passed-through alert), in every app
/// state, compared byte for byte with the envelope's `ct` (``CiphertextExposure``).
@Suite("The agent's banners never hold the envelope's ciphertext", .offThePool)
struct DesktopCiphertextTests {
    static let testVectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("TestVectors")

    @Test("no summary or body the presenter plans holds 12 bytes of the ct, on every vector of versions 1 to 3")
    func neverShown() throws {
        let files = try FileManager.default.contentsOfDirectory(at: Self.testVectors, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }
        var checked = 0
        var planned = 0
        for url in files {
            for vector in try TestVector.vectors(inFile: [UInt8](Data(contentsOf: url))) {
                guard vector.apns.objectValue?["kindly"]?.objectValue?["ct"]?.stringValue != nil else { continue }
                let decryption = KindlyPushDecryption(
                    keyring: InMemoryKeyring(keys: [vector.deviceKey], pinnedSenders: vector.pinnedSenderKeys))
                // What every app state would post, checked at once (the ct's windows are made once).
                var shown: [String] = []
                for state in [DisplayRules.AppState.foreground, .background, .killed] {
                    let options = DesktopPresenter.Options(showsPassthrough: true)
                    let plan = makePresenter(state, decryption: decryption, store: nil, options: options).plan(userInfo: vector.apns)
                    guard let notification = plan.notification else { continue }
                    planned += 1
                    shown += [notification.summary, notification.body]
                }
                #expect(!CiphertextExposure.exposes(shown, ciphertextOf: vector.apns), "\(vector.description): \(shown)")
                checked += 1
            }
        }
        #expect(checked >= 500)
        #expect(planned >= checked)
    }
}
