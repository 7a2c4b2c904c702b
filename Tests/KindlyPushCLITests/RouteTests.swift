import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// `kindly-push route` for every combination of display-rules.md's inputs, checked against the
/// spec's tables (SpecTables.swift, shared with the library's tests: the rows of the spec,
/// copied by hand, never derived from the code).
@Suite("kindly-push route", .offThePool)
struct RouteTests {
    static let device = DeviceKey.generate()
    static let stranger = DeviceKey.generate()

    /// A push of `kind` that decrypts with the device key, or is sealed for a stranger's.
    static func push(_ kind: PushKind, decrypts: Bool) -> [UInt8] {
        let payload = try! DecryptedPayload(chatId: "chat-9", title: "Anna", body: "Hi")
        let recipient = decrypts ? device.publicKey : stranger.publicKey
        var document = try! JSONReader.parse(KindlyPushSealer.seal(payload, for: recipient, mode: kind == .silent ? .silent : .visible))
            .objectValue!
        if kind == .plain { document["aps"] = ["alert": ["title": "New message", "body": "Open the app"], "sound": "default"] }
        return JSONWriter.compactBytes(.object(document))
    }

    static func arguments(_ combination: Combination, keyFile: String) -> [String] {
        [
            "route", "--app-state", combination.appState.rawValue, "--screen", combination.screen.rawValue, "--delegate",
            combination.delegate.rawValue,
        ]
            + (combination.hasExtension ? ["--extension"] : []) + ["--key-file", keyFile]
    }

    @Test("route prints exactly the spec's decision for every combination", arguments: Combination.all)
    func everyCombination(_ combination: Combination) throws {
        let folder = try KeyFolder(key: Self.device)
        let output = try CLI.run(
            Self.arguments(combination, keyFile: folder.keyFile), stdin: Self.push(combination.kind, decrypts: combination.decrypts))
        #expect(output.status == 0)
        #expect(output.stderr == "")
        let row = try #require(Spec.row(for: combination))
        var expected: JSONObject = [
            "kindly": true, "kind": .string(combination.kind.rawValue), "presentation": .string(row.presentation.rawValue),
            "presenter": .string(row.presenter.rawValue), "delegate_consulted": .bool(Spec.delegateConsulted(combination)),
        ]
        if row.presentation == .banner {
            expected["chat_id"] = "chat-9"
            expected["title"] = "Anna"
            expected["body"] = "Hi"
        }
        if !combination.decrypts { expected["reason"] = "key_unavailable" }
        #expect(output.stdout == JSONValue.object(expected).compactText + "\n", "\(row)")
    }

    @Test(
        "a push that is not Kindly's is passed through, in every state",
        arguments: [
            (#"{"aps":{"alert":"x","mutable-content":1}}"#, "visible"), (#"{"aps":{"alert":{"title":"x"}}}"#, "plain"),
            (#"{"aps":{"content-available":1}}"#, "silent"), (#"{"kindly":[],"aps":{"alert":"x"}}"#, "plain"),
        ], DisplayRules.AppState.allCases)
    func othersPushes(_ example: (push: String, kind: String), _ state: DisplayRules.AppState) throws {
        let (push, kind) = example
        for screen in DisplayRules.Screen.allCases {
            let output = try CLI.run(["route", "--app-state", state.rawValue, "--screen", screen.rawValue, "--extension"], stdin: push)
            #expect(output.status == 0)
            #expect(
                output.stdout
                    == #"{"kindly":false,"kind":"\#(kind)","presentation":"passthrough","presenter":"system","delegate_consulted":false}"#
                    + "\n")
        }
    }

    @Test("a push marked decrypted by the extension is routed from its alert, with no key and no reason")
    func markedDecrypted() throws {
        let payload = try DecryptedPayload(chatId: "chat-9", title: "Anna", body: "Hi")
        let applied = KindlyPushDecryption.apply(payload, toUserInfo: try JSONReader.parse(Self.push(.visible, decrypts: false)))
        let output = try CLI.run(["route", "--app-state", "foreground", "--extension", "--keyring", "file"], stdin: applied.compactText)
        #expect(
            output.stdout
                == #"{"kindly":true,"kind":"visible","presentation":"banner","presenter":"sdk","delegate_consulted":true,"chat_id":"chat-9","title":"Anna","body":"Hi"}"#
                + "\n")
    }

    @Test("route --jsonl routes each line and reports bad lines in place")
    func lines() throws {
        let input = Self.push(.silent, decrypts: true) + [0x0A] + Array("nope\n".utf8) + Self.push(.silent, decrypts: false)
        let folder = try KeyFolder(key: Self.device)
        let output = try CLI.run(["route", "--jsonl", "--app-state", "background", "--key-file", folder.keyFile], stdin: input)
        #expect(
            output.stdout.split(separator: "\n").map(String.init) == [
                #"{"kindly":true,"kind":"silent","presentation":"banner","presenter":"sdk","delegate_consulted":true,"chat_id":"chat-9","title":"Anna","body":"Hi"}"#,
                #"{"error":{"code":"bad_input","message":"the input is not JSON: unexpected byte at offset 1"}}"#,
                #"{"kindly":true,"kind":"silent","presentation":"none","presenter":"none","delegate_consulted":false,"reason":"key_unavailable"}"#,
            ])
    }
}
