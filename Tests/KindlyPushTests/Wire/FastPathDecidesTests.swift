import Foundation
import KindlyPushTesting
import Testing

@testable import KindlyPush
@testable import KindlyPushCore

extension FastPathTests {
    /// Text edits of a sealed push: `replacing` the first `of` with `with`.
    static func edit(_ push: [UInt8], _ of: String, _ with: String) -> [UInt8] {
        let text = String(decoding: push, as: UTF8.self)
        guard let range = text.range(of: of) else { return push }
        return Array(text.replacingCharacters(in: range, with: with).utf8)
    }

    /// The pushes the fast path used to leave to a second reading from scratch: each one
    /// is now decided by the fast path, with the general path's outcome, error text and offsets.
    @Test("shapes once left undecided: the fast path decides them, as the general path does")
    func formerlyUndecided() throws {
        let key = DeviceKey.generate()
        let sender = SenderKey.generate()
        var decryptor = PushDecryptor(KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])))
        var pinned = PushDecryptor(KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key], pinnedSenders: [sender.publicKey])))
        let payload = try DecryptedPayload(chatId: "c", title: "t", body: "b")
        let one = try KindlyPushSealer.seal(payload, for: key.publicKey)
        let two = try KindlyPushSealer.seal(payload, for: key.publicKey, from: sender)
        let three = try KindlyPushSealer.seal(payload, for: key.publicKey, wire: .three)
        let threeAuth = try KindlyPushSealer.seal(payload, for: key.publicKey, wire: .three, from: sender)
        let kid = key.kid.base64URL
        let first = String(kid.prefix(1))
        let escapedFirst = String(format: "\\u%04X", Int(first.unicodeScalars.first!.value))
        let many = (0..<20).map { "\"x\($0)\":\($0)," }.joined()
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        let tooDeep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)

        let decrypts: [[UInt8]] = [
            Self.edit(one, "\"kid\":\"\(first)", "\"kid\":\"\(escapedFirst)"),  // an escape in a base64 field
            Self.edit(one, "\"kid\"", "\"k\\u0069d\""),  // an escape in a member name
            Self.edit(one, "{", "{" + many),  // more than 16 top-level members
            Self.edit(one, "\"kid\"", many + "\"kid\""),  // more than 16 envelope members
            Self.edit(one, "{", "{\"deep\":\(deep),"),  // nesting deeper than the old limit of 32
            Self.edit(one, "{", "{\"e\u{301}\":3,\"\u{E9}\":4,"),  // names compare by UTF-8 bytes
            Self.edit(one, "\"v\":1", "\"v\":1.0"), Self.edit(one, "\"v\":1", "\"v\":10e-1"),
            Self.edit(one, "\"v\":1", "\"sid\":{\"any\":[true]},\"v\":1"),  // version 1 ignores any sid
            Self.edit(one, "\"kid\":\"", "\"x\":\"\u{E9}\\n\\ud83c\\udf5c\",\"kid\":\""),  // escapes and UTF-8 elsewhere
            Self.edit(one, "\"v\":1", "\"v\":1,\"sid\":\"\u{E9}!\""),  // an ignored sid, no base64, checked as JSON
            Self.edit(one, "\"v\":1", "\"v\":1,\"kindly\":{}"),  // the envelope's own name in it: an unknown member
        ]
        for push in decrypts {
            #expect(push != one, "an edit that did not apply")
            #expect(Self.check(push, &decryptor) == .decrypted, "\(String(decoding: push, as: UTF8.self))")
        }
        let failures: [([UInt8], DecryptionFailure.Reason)] = [
            (Self.edit(one, "{", "{\"kindly\":{},"), .malformed),  // duplicate kindly
            (Self.edit(one, "\"kindly\"", "\"k\\u0069ndly\":true,\"kindly\""), .malformed),  // an escaped duplicate
            (Self.edit(one, "\"kindly\"", "\"kindly\":[],\"kindly\""), .malformed),  // a non-object kindly first
            (Self.edit(one, "{", "{\"\u{E9}\":4,\"\\u00e9\":5,"), .malformed),  // the same name, once escaped
            (Self.edit(one, "{", "{" + many + "\"x3\":0,"), .malformed),  // a duplicate after 16 names
            (Self.edit(one, "\"kid\"", many + "\"x19\":0,\"kid\""), .malformed),
            (Self.edit(one, "\"kindly\"", "\"kindlx\""), .notKindly), (Self.edit(one, "\"kindly\":{", "\"kindly\":7,\"x\":{"), .notKindly),
            (Self.edit(one, "\"v\":1,", "\"v\":1,\"v\":1,"), .malformed), (Self.edit(one, "\"v\":1", "\"v\":4"), .unsupportedVersion),
            (Self.edit(one, "\"kid\"", "\"k\\u0069d\":\"AAAAAAAAAAA\",\"kid\""), .malformed),  // a member once escaped, twice
            (Self.edit(one, "\"kid\"", "\"sid\":1,\"s\\u0069d\":2,\"kid\""), .malformed),  // an ignored member twice
            (Self.edit(one, "\"kid\"", "\"kindly\":1,\"kindly\":2,\"kid\""), .malformed),  // the envelope's own name, in it twice
            // Each version's own members twice, once escaped: version 2's sid, version 3's enc,
            // mode_auth's sid.
            (Self.edit(two, "\"sid\"", "\"s\\u0069d\":\"AAAAAAAAAAA\",\"sid\""), .malformed),
            (Self.edit(three, "\"enc\"", "\"e\\u006ec\":\"AAAA\",\"enc\""), .malformed),
            (Self.edit(threeAuth, "\"sid\"", "\"sid\":\"AAAAAAAAAAA\",\"s\\u0069d\""), .malformed),
            (Self.edit(one, "\"v\":1", "\"v\":\"1\""), .unsupportedVersion), (Self.edit(one, "\"v\":1,", ""), .unsupportedVersion),
            (Self.edit(one, "\"v\":1", "\"v\":-0"), .unsupportedVersion), (Self.edit(one, "\"v\":1", "\"v\":null"), .unsupportedVersion),
            (Self.edit(one, "\"kid\":\"", "\"kid\":\"!"), .malformed), (Self.edit(one, "\"kid\":\"", "\"kid\":\"AAAA"), .malformed),
            (Self.edit(one, "\"kid\":\"", "\"kid\":1,\"x\":\""), .malformed), (Self.edit(one, "\"n\":\"", "\"n\":\"AAAA"), .malformed),
            (Self.edit(one, "\"n\":\"", "\"n\":\"A"), .malformed), (Self.edit(one, "\"ct\":\"", "\"ct\":\"AAAA"), .malformed),
            (Self.edit(one, "\"ct\":\"", "\"ct\":\"AB=="), .malformed), (Self.edit(one, "\"epk\"", "\"enc\""), .malformed),
            (Self.edit(three, "\"enc\"", "\"epk\""), .malformed), (Self.edit(two, "\"sid\"", "\"sis\""), .malformed),
            (Self.edit(two, "\"sid\":\"", "\"sid\":\"\\u0041"), .malformed),
            (Self.edit(threeAuth, "\"sid\":\"", "\"sid\":[\"x\"],\"y\":\""), .malformed),
            (Self.edit(three, "\"v\":3", "\"v\":3,\"sid\":false"), .malformed), (two, .untrustedSender),
            (Self.edit(three, "\"v\":3", "\"v\":3,\"sid\":\"\""), .malformed),
            (Self.edit(one, "\"kid\":\"\(kid)\"", "\"kid\":\"AAAAAAAAAAA\""), .keyUnavailable),
            (Self.edit(one, "\"kid\":\"", "\"kid\":\"\u{E9}"), .malformed), (Self.edit(one, "\"kid\":\"", "\"kid\":\"A\\\"B"), .malformed),
        ]
        for (push, reason) in failures {
            let outcome = Self.check(push, &decryptor)
            guard case .failed(let failure) = outcome else {
                Issue.record("\(outcome) for \(String(decoding: push, as: UTF8.self))")
                continue
            }
            #expect(failure.reason == reason, "\(failure) for \(String(decoding: push, as: UTF8.self))")
        }
        #expect(Self.check(two, &pinned) == .decrypted)
        #expect(Self.check(threeAuth, &pinned) == .decrypted)
        // Texts that are no JSON object: the strict reader's error, kind and offset, or the type.
        let invalid: [[UInt8]] = [
            [0xEF, 0xBB, 0xBF] + one, [], Array(" \n".utf8), Array(one.dropLast()), one + Array(" x".utf8),
            Self.edit(one, "{", "{\"deep\":\(tooDeep),"), Self.edit(one, "\"kid\":\"", "\"kid\":\"\u{1}"),
            Self.edit(one, "\"kid\":\"", "\"kid\":\"\\x"), Self.edit(one, "\"kid\":\"", "\"kid\":\"\\uD800"),
            Self.edit(one, "\"kid\":\"", "\"kid\":\"\\uDC00\\u0041"), Self.edit(one, "\"kid\":\"", "\"kid\":\"\\u12\""),
            Self.edit(one, "\"v\":1", "\"v\":01"), Self.edit(one, "\"v\":1", "\"v\":tru"), Self.edit(one, "\"kid\"", "kid"),
            Self.edit(one, "\"kid\":", "\"kid\""), Self.edit(one, ",\"n\"", "\"n\""),
            Array("[1,2]".utf8), Array("\"x\"".utf8), Array("null".utf8),
            Array("-1".utf8), Array("[1,".utf8),
        ]
        var withBadUTF8 = Self.edit(one, "\"kid\":\"", "\"x\":\"ab\u{E9}c\",\"kid\":\"")
        if let index = withBadUTF8.firstIndex(of: 0xC3) { withBadUTF8[index] = 0xFF }
        var withBadEscapedUTF8 = Self.edit(one, "\"kid\":\"", "\"x\":\"a\\nb\u{E9}c\",\"kid\":\"")
        if let index = withBadEscapedUTF8.firstIndex(of: 0xC3) { withBadEscapedUTF8[index] = 0xC0 }
        // Envelope strings are found by their closing quote and proven by their base64 decoding;
        // one that is no valid JSON string is still the first mistake of the text, before a later
        // one, before the duplicate and envelope rules, and in a member the version does not read.
        var kidBadUTF8 = Self.edit(one, "\"kid\":\"", "\"kid\":\"\u{E9}")
        if let index = kidBadUTF8.firstIndex(of: 0xC3) { kidBadUTF8[index] = 0xFF }
        let lazilyChecked: [[UInt8]] = [
            Self.edit(one, "\"kid\":\"", "\"kid\":\"\u{1}") + Array(" x".utf8),
            Self.edit(Self.edit(one, "\"kid\":\"", "\"kid\":\"\u{1}"), "{", "{\"a\":1,\"a\":2,"),
            Self.edit(Self.edit(one, "\"n\":\"", "\"n\":\"\u{2}"), "\"ct\":\"", "\"ct\":\"\u{1}"),
            Self.edit(one, "\"ct\":\"", "\"ct\":\"\u{1F}"), Self.edit(one, "\"v\":1", "\"v\":\"1\u{1}\""), kidBadUTF8,
            Self.edit(one, "\"v\":1", "\"v\":1,\"sid\":\"\u{1}\""), Self.edit(three, "\"v\":3", "\"v\":3,\"epk\":\"A\u{1}\""),
            Self.edit(one, "\"kid\":\"", "\"kid\":\"\u{7}") + Array("]".utf8),
        ]
        for push in invalid + lazilyChecked + [withBadUTF8, withBadEscapedUTF8] {
            let outcome = Self.check(push, &decryptor)
            switch outcome {
            case .notJSON, .notObject: break
            default: Issue.record("\(outcome) for \(String(decoding: push, as: UTF8.self))")
            }
        }
    }
}
