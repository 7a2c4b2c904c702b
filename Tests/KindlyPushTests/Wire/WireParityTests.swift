import KindlyPush
import KindlyPushBase
import KindlyPushCore
import Testing

/// The parity matrix in the library: `decryptResult`, the async stream (documents and
/// JSON lines), the router in each app state and the handler's device presentation give, for
/// every wire version and mode, version 1's outcome for the same case, the pins a version needs
/// given. Envelopes (each version's own) and failure messages (which may name a version's
/// members) are left out of the comparison; reasons, payloads, decisions and texts are not. The
/// pushes carry the default placeholder: a pinned reader (versions 2 and mode_auth) shows its own,
/// the default, for a push that does not decrypt, by design.
@Suite("Wire parity in the library: every entry point, every version and mode, as version 1", .offThePool)
struct LibraryWireParityTests {
    enum Sealing: String, CaseIterable {
        case one = "v1"
        case two = "v2"
        case threeBase = "v3 mode_base"
        case threeAuth = "v3 mode_auth"
        var wire: WireVersion { self == .one ? .one : self == .two ? .two : .three }
        var needsSender: Bool { self == .two || self == .threeAuth }
    }

    static let cases = ["message_id", "no message_id", "other device", "tampered", "not Kindly", "bad document"]
    let key = DeviceKey.generate()
    let sender = SenderKey.generate()

    func document(_ name: String, _ sealing: Sealing) throws -> [UInt8] {
        switch name {
        case "not Kindly": return Array(#"{"aps":{"alert":{"title":"Hi","body":"there"}}}"#.utf8)
        case "bad document": return Array(#"{"aps":"#.utf8)
        default: break
        }
        let payload = try DecryptedPayload(
            chatId: "c-1", title: "Anna", body: "Lunch?", messageId: name == "no message_id" ? nil : "m-1", sentAt: 1_764_460_800)
        let recipient = name == "other device" ? DeviceKey.generate().publicKey : key.publicKey
        var sealed = try KindlyPushSealer.seal(
            payload, for: recipient, wire: sealing.wire, from: sealing.needsSender ? sender : nil,
            placeholder: .default)  // a pinned reader shows its own (the default) for a push that does not decrypt
        if name == "tampered" {
            let ct = try #require(sealed.indices.first { sealed[$0...].starts(with: Array(#""ct":""#.utf8)) })
            let at = ct + 14
            sealed[at] = sealed[at] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        }
        return sealed
    }

    func decryption(_ sealing: Sealing) -> KindlyPushDecryption {
        KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]), pinnedSenderKeys: sealing.needsSender ? [sender.publicKey] : [])
    }

    /// One row of the matrix: what every entry point made of one case, as text.
    func row(_ name: String, _ sealing: Sealing) async throws -> [String] {
        let bytes = try document(name, sealing)
        let decryption = decryption(sealing)
        let value = (try? JSONValue(parsing: String(decoding: bytes, as: UTF8.self))) ?? .null
        var row: [String] = []
        switch decryption.decryptResult(userInfo: value) {
        case .success(let payload): row.append("decryptResult: \(payload)")
        case .failure(let failure): row.append("decryptResult: \(failure.reason.code)")
        }
        let documents = AsyncStream<[UInt8]> {
            $0.yield(bytes)
            $0.finish()
        }
        for try await result in decryption.decryptStream(documents, jobs: 1) {
            row.append("decryptStream: \(result.code) \(result.payload.map { "\($0)" } ?? "")")
        }
        let chunks = AsyncStream<[UInt8]> {
            $0.yield(bytes + [0x0A] + bytes + [0x0A])
            $0.finish()
        }
        for try await result in decryption.decryptStream(jsonLines: chunks, jobs: 2) {
            // The line the command prints: the payload, or the error object without its message.
            let line = (try? JSONValue(parsing: String(decoding: result.json, as: UTF8.self)))?["error"]?["code"]?.stringValue
            row.append("jsonLines: \(line ?? String(decoding: result.json, as: UTF8.self))")
        }
        // A front end of the engine's own (the worked example of docs/architecture.md).
        for (code, line) in acknowledge([bytes, bytes], decryption: decryption, jobs: 2) {
            let shown = code == "ok" ? line : code
            row.append("queue: \(shown)")
        }
        for context in [
            RouteContext(appState: .killed), RouteContext(appState: .background, hasExtension: true),
            RouteContext(appState: .foreground, screen: .other),
            {
                var onChat = RouteContext(appState: .foreground, screen: .chat)
                onChat.chatOnScreen = "c-1"
                return onChat
            }(),
        ] {
            let decision = KindlyPushRouter.route(userInfo: value, context: context, decryption: decryption)
            row.append("route \(context.appState): \(decision)")
        }
        let handler = KindlyNotificationHandler(decryption: decryption, hasExtension: true, openChat: { _ in })
        handler.setAppState(.background, chatOnScreen: nil)
        row.append("devicePresentation: \(handler.devicePresentation(for: value).content)")
        return row
    }

    @Test(
        "decryptResult, decryptStream (documents, JSON lines), a queue on the engine, route and the handler agree with version 1",
        arguments: cases)
    func parity(_ name: String) async throws {
        let reference = try await row(name, .one)
        #expect(reference.count == 11)
        for sealing in Sealing.allCases.dropFirst() {
            #expect(try await row(name, sealing) == reference, "\(name), \(sealing.rawValue)")
        }
    }
}
