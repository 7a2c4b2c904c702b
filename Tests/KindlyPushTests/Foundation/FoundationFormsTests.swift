import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import KindlyPushVectors
import Testing

/// The `Data` and `[AnyHashable: Any]` forms give the same results as the `JSONValue` forms, and
/// a host's own values never make a Kindly push unreadable.
@Suite("Data and dictionary forms", .offThePool)
struct FoundationFormsTests {
    static let key = DeviceKey.generate()
    static let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key]))

    /// A sealed push as `JSONSerialization` gives it to a host, with the host's own values added.
    static func hostDictionary(_ push: JSONValue, adding extra: [String: Any]) throws -> [AnyHashable: Any] {
        let data = push.compactData
        var dictionary = try #require(try JSONSerialization.jsonObject(with: data) as? [AnyHashable: Any])
        for (name, value) in extra { dictionary[name] = value }
        return dictionary
    }

    @Test("decryptResult of a userInfo holding a Date (top level, in aps and in kindly) decrypts")
    func dateInDictionary() throws {
        let push = try TestPushes.sealed(.visible, for: Self.key)
        let received = Date(timeIntervalSince1970: 1_764_460_800)
        var userInfo = try Self.hostDictionary(push, adding: ["received_at": received, "trace_id": "t-42"])
        var aps = try #require(userInfo["aps"] as? [AnyHashable: Any])
        aps["delivered"] = received
        userInfo["aps"] = aps
        var kindly = try #require(userInfo["kindly"] as? [AnyHashable: Any])
        kindly["host_note"] = received
        userInfo["kindly"] = kindly

        #expect(KindlyPushDecryption.isKindlyNotification(userInfo))
        let payload = try Self.decryption.decryptResult(userInfo: userInfo).get()
        #expect(payload == TestPushes.payload)
        #expect(Self.decryption.decrypt(userInfo: userInfo) == TestPushes.payload)
        #expect(PushKind(userInfo: userInfo) == .visible)
        let decision = KindlyPushRouter.route(
            userInfo: userInfo, context: RouteContext(appState: .foreground), decryption: Self.decryption)
        #expect(decision.presentation == .banner)
        #expect(decision.title == "Anna")
    }

    @Test("apply to a dictionary keeps every member it does not write, unconverted values included")
    func applyKeepsEverything() throws {
        let push = try TestPushes.sealed(.visible, for: Self.key)
        let received = Date(timeIntervalSince1970: 1_764_460_800)
        let userInfo = try Self.hostDictionary(push, adding: ["received_at": received, "trace_id": "t-42"])
        let applied = KindlyPushDecryption.apply(TestPushes.payload, toUserInfo: userInfo)

        #expect(applied["received_at"] as? Date == received)
        #expect(applied["trace_id"] as? String == "t-42")
        let aps = try #require(applied["aps"] as? [AnyHashable: Any])
        #expect(aps["sound"] as? String == "default")
        let alert = try #require(aps["alert"] as? [AnyHashable: Any])
        #expect(alert["title"] as? String == "Anna")
        #expect(alert["body"] as? String == "Hi!")
        let kindly = try #require(applied["kindly"] as? [AnyHashable: Any])
        #expect(kindly["decrypted"] as? Bool == true)
        #expect(kindly["chat_id"] as? String == "c-1")
        #expect(kindly["message_id"] as? String == "m-1")
        #expect(kindly["ct"] as? String == push["kindly"]?["ct"]?.stringValue)
        #expect(KindlyPushDecryption.isDecrypted(applied))
        #expect(KindlyPushDecryption.isDecrypted(userInfo: applied))
        #expect(!KindlyPushDecryption.isDecrypted(userInfo))
    }

    @Test("isKindlyNotification of a dictionary looks at `kindly` alone")
    func detectionLooksAtKindlyAlone() {
        // Each dictionary is a typed local first: with a literal that holds an `as` cast inside
        // #expect, the macro checked nothing (the expectation passed for any dictionary).
        let kindly: [AnyHashable: Any] = ["kindly": ["v": 1] as [String: Any], "x": Date()]
        let emptyKindly: [AnyHashable: Any] = ["kindly": [String: Any]()]
        let textKindly: [AnyHashable: Any] = ["kindly": "text", "aps": ["alert": "hi"]]
        let foreign: [AnyHashable: Any] = ["aps": ["alert": "hi"], "when": Date()]
        #expect(KindlyPushDecryption.isKindlyNotification(kindly) == true)
        #expect(KindlyPushDecryption.isKindlyNotification(emptyKindly) == true)
        #expect(KindlyPushDecryption.isKindlyNotification(textKindly) == false)
        #expect(KindlyPushDecryption.isKindlyNotification(foreign) == false)
    }

    @Test("a dictionary whose envelope field is not JSON fails as if the field were missing: malformed")
    func unreadableEnvelopeField() throws {
        let push = try TestPushes.sealed(.visible, for: Self.key)
        var userInfo = try Self.hostDictionary(push, adding: [:])
        var kindly = try #require(userInfo["kindly"] as? [AnyHashable: Any])
        kindly["ct"] = Date()
        userInfo["kindly"] = kindly
        let failure = try #require(Self.decryption.decryptResult(userInfo: userInfo).failure)
        #expect(failure.reason == .malformed)
    }

    @Test("\"v\":1,\"v\":1 is malformed from bytes; JSONSerialization drops the duplicate and the dictionary form decrypts")
    func duplicateMembers() throws {
        let push = try TestPushes.sealed(.visible, for: Self.key)
        let text = push.compactText.replacingOccurrences(of: "\"v\":1", with: "\"v\":1,\"v\":1")
        let data = Data(text.utf8)
        #expect(Self.decryption.decryptResult(userInfo: data).failure?.reason == .malformed)
        let dictionary = try #require(try JSONSerialization.jsonObject(with: data) as? [AnyHashable: Any])
        #expect(Self.decryption.decrypt(userInfo: dictionary) == TestPushes.payload)
    }

    @Test("bytes that are not JSON: not Kindly's, silent, not_kindly; apply throws and loses nothing")
    func notJSON() {
        let data = Data("{\"kindly\":".utf8)
        #expect(!KindlyPushDecryption.isKindlyNotification(data))
        #expect(PushKind(userInfo: data) == .silent)
        #expect(Self.decryption.decryptResult(userInfo: data).failure?.reason == .notKindly)
        #expect(throws: JSONReadError.self) { try KindlyPushDecryption.apply(TestPushes.payload, toUserInfo: data) }
        #expect(throws: JSONReadError.self) { try JSONValue(parsing: data) }
    }

    @Test("on every vector, the Data form gives the JSONValue form's result, detection, kind and route")
    func dataFormsAgreeOnEveryVector() throws {
        var checked = 0
        for url in try Resources.vectorFiles() {
            for vector in try TestVector.vectors(inFile: [UInt8](Data(contentsOf: url))) {
                let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [vector.deviceKey]))
                let data = vector.apns.compactData
                let value = try JSONValue(parsing: data)
                #expect(value == vector.apns)
                let fromData = decryption.decryptResult(userInfo: data)
                let fromValue = decryption.decryptResult(userInfo: vector.apns)
                #expect(fromData.success == fromValue.success, "\(vector.description)")
                #expect(fromData.failure?.reason == fromValue.failure?.reason, "\(vector.description)")
                #expect(KindlyPushDecryption.isKindlyNotification(data) == KindlyPushDecryption.isKindlyNotification(vector.apns))
                #expect(KindlyPushDecryption.isDecrypted(data) == KindlyPushDecryption.isDecrypted(vector.apns))
                #expect(PushKind(userInfo: data) == PushKind(userInfo: vector.apns))
                let context = RouteContext(appState: .foreground)
                #expect(
                    KindlyPushRouter.route(userInfo: data, context: context, decryption: decryption)
                        == KindlyPushRouter.route(userInfo: vector.apns, context: context, decryption: decryption))
                checked += 1
            }
        }
        #expect(checked >= 300)
    }

    @Test("on every vector without duplicate members, the dictionary form gives the JSONValue form's reason")
    func dictionaryFormsAgreeOnVectors() throws {
        var checked = 0
        for url in try Resources.vectorFiles() {
            for vector in try TestVector.vectors(inFile: [UInt8](Data(contentsOf: url))) {
                let data = vector.apns.compactData
                // Duplicates (the dictionary cannot hold them), lone surrogates and documents that
                // are not objects are the Data form's alone.
                guard vector.apns.objectValue?.hasDuplicateKeys == false, !vector.apns.compactText.contains("\\ud"),
                    let dictionary = try? JSONSerialization.jsonObject(with: data) as? [AnyHashable: Any],
                    (vector.apns["kindly"]?.objectValue?.hasDuplicateKeys ?? false) == false
                else { continue }
                let decryption = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [vector.deviceKey]))
                let fromDictionary = decryption.decryptResult(userInfo: dictionary)
                let fromValue = decryption.decryptResult(userInfo: vector.apns)
                #expect(fromDictionary.failure?.reason == fromValue.failure?.reason, "\(vector.description)")
                #expect(fromDictionary.success?.chatId == fromValue.success?.chatId, "\(vector.description)")
                #expect(KindlyPushDecryption.isKindlyNotification(dictionary) == KindlyPushDecryption.isKindlyNotification(vector.apns))
                checked += 1
            }
        }
        #expect(checked >= 200)
    }
}

extension Result {
    /// The value, when there is one.
    var success: Success? { try? get() }
}
