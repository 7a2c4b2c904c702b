import FuzzSupport
import KindlyPush
import KindlyPushCore
import KindlyPushTesting

/// The whole decrypt path with one fixed device key (the test vectors' key) and one fixed sender
/// key (the version 2 vectors' pinned one): the envelope checks of both versions, key look-up,
/// the pinned-sender check, X25519, the AEAD, the padding and the plaintext validation.
///
/// Every input is used twice:
/// 1. as an APNs document, decrypted as it is by a reader outside pinned mode and by one that
///    pins the sender key (most inputs stop at reasons 1 to 4; the vectors' documents reach the
///    later ones and decrypt);
/// 2. as a plaintext, sealed for the fixed key by the reference sealer as version 1 and as
///    version 2 (padded, or taken as already padded when its length is a positive multiple of
///    64) and decrypted by both readers, so that any text reaches the padding and section-4
///    checks.
///
/// Invariants: the result is a payload or one of the seven reasons, and it is the reference's
/// (Reference.swift, written from the spec on libsodium directly); `decryptResult(using:)`, a
/// keyring holding the key and the pins, and a reader given the pins agree; `not_kindly` exactly
/// when `isKindlyNotification` is false; the fast path agrees with the general path; a payload
/// re-validates (from its object and from its compact text) with the same fields, and after
/// `apply` the push is Kindly's, marked decrypted, still decrypts to the same payload and keeps
/// everything else.
enum DecryptTarget {
    static let secretKey = try! Base64.decode("9BsPlkJa0FEvI7U_VQUmX3PBV8YpFMHb-3FOIzP47Jg")
    static let key = DeviceKey(secretKey: try! secretKey.withUnsafeBytes { try DeviceSecretKey(SecureBytes(copying: $0)) })
    static let publicKey = RawSodium.scalarMultBase(secretKey)
    static let kid = RawSodium.blake2b(publicKey, outputLength: 8)

    /// The version 2 vectors' pinned sender key.
    static let senderSecretKey = try! Base64.decode("b897lElmhXaAv9NIBtj73gfc7PO3dHrBNtSPgxjyoWw")
    static let senderPublicKey = RawSodium.scalarMultBase(senderSecretKey)
    static let sender = try! SenderKey(base64: "b897lElmhXaAv9NIBtj73gfc7PO3dHrBNtSPgxjyoWw")
    static let sid = RawSodium.blake2b(senderPublicKey, outputLength: 8)

    /// A reader: its pins as bytes (for the reference) and as keys, and its readers through a
    /// keyring holding the pins and given the pins.
    struct Reader {
        let pinned: [[UInt8]]
        let keys: [SenderPublicKey]
        let throughKeyring: KindlyPushDecryption
        let givenPins: KindlyPushDecryption

        init(pinning keys: [SenderPublicKey]) {
            self.keys = keys
            pinned = keys.map(\.rawRepresentation)
            throughKeyring = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [DecryptTarget.key], pinnedSenders: keys))
            givenPins = KindlyPushDecryption(keyring: InMemoryKeyring(keys: [DecryptTarget.key]), pinnedSenderKeys: keys)
        }
    }

    static let unpinned = Reader(pinning: [])
    static let pinned = Reader(pinning: [sender.publicKey])
    static let readers = [unpinned, pinned]

    /// The reference sealer's fixed ephemeral key and nonce (never do this outside a test).
    static let ephemeralSecretKey = try! Base64.decode("ol7SxVQVh-Q4g9dH3VZHpYY-l-bJeCQ3rd7wcd2AXkk")
    static let ephemeralPublicKey = RawSodium.scalarMultBase(ephemeralSecretKey)
    static let nonce = try! Base64.decode("E11LR0rP36WFhOmYqz53PXcjB9EmCepD")
    static let sealingKey = RawSodium.blake2b(
        Reference.label + RawSodium.scalarMult(ephemeralSecretKey, publicKey)! + ephemeralPublicKey + publicKey, outputLength: 32)
    /// Version 2: `BLAKE2b(LABEL2 || ss_e || ss_s || epk || pk || spk)`.
    static let sealingKey2 = RawSodium.blake2b(
        Reference.label2 + RawSodium.scalarMult(ephemeralSecretKey, publicKey)! + RawSodium.scalarMult(senderSecretKey, publicKey)!
            + ephemeralPublicKey + publicKey + senderPublicKey, outputLength: 32)

    static func check(_ input: UnsafeRawBufferPointer) {
        require(key.publicKey.rawRepresentation == publicKey && key.kid.bytes == kid, "the fixed key does not match libsodium")
        require(sender.publicKey.rawRepresentation == senderPublicKey && sender.sid.bytes == sid, "the sender key does not match libsodium")
        let document = try? JSONReader.parse(input)
        for reader in readers {
            let general = document.map { checkDocument($0, reader) }
            checkFastPath(input, document: document, general: general, reader)
        }
        checkSealed(plaintext: Array(input))
    }

    /// The fast path of `decrypt --jsonl` (``PushDecryptor``) on the raw text must agree with the
    /// general path on every text: the strict reader's error for a text it refuses, the type
    /// of a document that is no object, the same payload bytes when it decrypts, the same
    /// failure (reason and text) when it fails. `general` is the reader's general result for
    /// `document` (``checkDocument(_:_:)``).
    static func checkFastPath(
        _ input: UnsafeRawBufferPointer, document: JSONValue?, general: Result<DecryptedPayload, DecryptionFailure>?, _ reader: Reader
    ) {
        var decryptor = PushDecryptor(reader.throughKeyring)
        var output: [UInt8] = []
        let outcome = decryptor.decrypt(input, appendingTo: &output)
        if case .decrypted = outcome {} else { require(output.isEmpty, "the fast path wrote output without decrypting") }
        guard let document, let general else {
            let error: JSONReadError?
            do throws(JSONReadError) {
                _ = try JSONReader.parse(input)
                error = nil
            } catch let thrown {
                error = thrown
            }
            require(
                error != nil && outcome == .notJSON(error!),
                "the fast path gives \(outcome), the strict reader \(String(describing: error))")
            return
        }
        guard case .object = document else {
            require(outcome == .notObject(document.kind), "the fast path gives \(outcome) for \(document.typeName)")
            return
        }
        switch (outcome, general) {
        case (.decrypted, .success(let payload)):
            require(output == JSONWriter.compactBytes(.object(payload.object)), "the fast path wrote another payload")
        case (.failed(let fast), .failure(let general)):
            require(fast == general, "the fast path fails with \(fast), the general path with \(general)")
        default:
            fail("the fast path gives \(outcome), the general path another result")
        }
    }

    /// Seals `plaintext` as the backend would (section 2, and section 7.2 with the fixed sender
    /// key, written out with libsodium) and decrypts the resulting APNs text with both readers:
    /// only a payload or `bad_plaintext` can come out where the reader trusts the push, and
    /// `untrusted_sender` where it does not (version 1 in pinned mode, version 2 outside it).
    static func checkSealed(plaintext: [UInt8]) {
        let message = !plaintext.isEmpty && plaintext.count % 64 == 0 ? plaintext : Reference.pad(plaintext)
        for version in [1, 2] {
            let ciphertext =
                version == 1
                ? RawSodium.seal(message, additionalData: Reference.label + kid, nonce: nonce, key: sealingKey)
                : RawSodium.seal(message, additionalData: Reference.label2 + kid + sid, nonce: nonce, key: sealingKey2)
            let fields = [kid, ephemeralPublicKey, nonce, ciphertext].map { Base64.urlEncoded($0) }
            let sidMember = version == 2 ? #""sid":"\#(Base64.urlEncoded(sid))","# : ""
            let text = Array(
                #"{"aps":{"content-available":1},"kindly":{"v":\#(version),"kid":"\#(fields[0])",\#(sidMember)"epk":"\#(fields[1])","n":"\#(fields[2])","ct":"\#(fields[3])"}}"#
                    .utf8)
            let document: JSONValue
            do {
                document = try JSONReader.parse(text)
            } catch {
                fail("the sealed push does not read: \(error)")
            }
            for reader in readers {
                let trusted = (version == 2) == !reader.keys.isEmpty
                let general = checkDocument(document, reader)
                switch general {
                case .success:
                    require(trusted, "a version \(version) push decrypts for a reader pinning \(reader.keys.count) keys")
                case .failure(let failure):
                    let expected: DecryptionFailure.Reason = trusted ? .badPlaintext : .untrustedSender
                    require(failure.reason == expected, "a well-sealed version \(version) push fails with \(failure.reason)")
                }
                text.withUnsafeBytes { checkFastPath($0, document: document, general: general, reader) }
            }
        }
    }

    /// Decrypts `document` every way there is and checks the results against the reference;
    /// returns the result through the reader's keyring (the fast path's general result).
    @discardableResult
    static func checkDocument(_ document: JSONValue, _ reader: Reader) -> Result<DecryptedPayload, DecryptionFailure> {
        let result = KindlyPushDecryption.decryptResult(userInfo: document, using: key, pinnedSenderKeys: reader.keys)
        let expected = Reference.decrypt(document, secretKey: secretKey, publicKey: publicKey, kid: kid, pinned: reader.pinned)
        let isKindly = KindlyPushDecryption.isKindlyNotification(document)
        switch result {
        case .failure(let failure):
            require(DecryptionFailure.Reason.allCases.contains(failure.reason), "an unknown reason \(failure.reason)")
            require(expected == .failure(failure.reason), "fails with \(failure), the reference gives \(expected)")
            require((failure.reason == .notKindly) == !isKindly, "\(failure.reason) for a push that isKindlyNotification calls \(isKindly)")
        case .success(let payload):
            require(expected == .payload(payload.object), "decrypts to \(payload.object), the reference gives \(expected)")
            require(isKindly, "decrypts a push that isKindlyNotification refuses")
            checkPayload(payload)
            checkApply(payload, to: document, reader)
        }
        // Without pins the two readers are the same; with them, pins in the keyring and pins given agree.
        let general = reader.throughKeyring.decryptResult(userInfo: document)
        let others = reader.keys.isEmpty ? [] : [reader.givenPins.decryptResult(userInfo: document)]
        for viaKeyring in [general] + others {
            switch (result, viaKeyring) {
            case (.success(let lhs), .success(let rhs)):
                require(lhs == rhs, "the keyring path decrypts to another payload")
            case (.failure(let lhs), .failure(let rhs)):
                require(lhs.reason == rhs.reason, "the keyring path fails with \(rhs.reason), the fixed key with \(lhs.reason)")
            default:
                fail("the keyring path gives \(viaKeyring), the fixed key \(result)")
            }
        }
        return general
    }

    /// A payload is section 4's: the fields are the object's, and it validates again.
    static func checkPayload(_ payload: DecryptedPayload) {
        let object = payload.object
        require(!payload.chatId.isEmpty, "an empty chat_id")
        require(Reference.member(object, "chat_id") == .string(payload.chatId), "chatId is not the object's chat_id")
        require(Reference.member(object, "title") == .string(payload.title), "title is not the object's")
        require(Reference.member(object, "body") == .string(payload.body), "body is not the object's")
        require(Reference.member(object, "message_id") == payload.messageId.map { .string($0) }, "messageId is not the object's")
        require(Reference.member(object, "truncated") == payload.truncated.map { .bool($0) }, "truncated is not the object's")
        if let sentAt = payload.sentAt {
            require((0...(1 << 53 - 1)).contains(sentAt), "sent_at \(sentAt) out of range")
            guard case .number(let number)? = Reference.member(object, "sent_at") else { fail("sentAt without a sent_at number") }
            require(number == JSONNumber(Int(sentAt)), "sentAt \(sentAt) is not the object's \(number)")
        } else {
            require(Reference.member(object, "sent_at") == nil, "a sent_at the payload does not show")
        }
        let known = ["chat_id", "title", "body", "message_id", "sent_at", "truncated"]
        let extras = object.members.filter { member in !known.contains { Reference.same($0, member.key) } }
        require(payload.extras.members == extras, "extras are not the object's other members")
        require((try? DecryptedPayload(validating: object)) == payload, "the payload does not re-validate from its object")
        let text = JSONWriter.compactBytes(.object(object))
        let again = try? text.withUnsafeBytes { try DecryptedPayload(plaintext: $0) }
        require(again == payload, "the payload does not re-validate from its compact text")
    }

    /// Section 5, apply: rewritten for display, marked decrypted, still the same push otherwise.
    static func checkApply(_ payload: DecryptedPayload, to document: JSONValue, _ reader: Reader) {
        let applied = KindlyPushDecryption.apply(payload, toUserInfo: document)
        require(KindlyPushDecryption.isKindlyNotification(applied), "apply makes the push not Kindly's")
        require(KindlyPushDecryption.isDecrypted(userInfo: applied), "apply does not mark the push decrypted")
        guard case .object(let before) = document, case .object(let after) = applied,
            case .object(let aps)? = Reference.member(after, "aps"), case .object(let alert)? = Reference.member(aps, "alert"),
            case .object(let envelope)? = Reference.member(after, "kindly"),
            case .object(let oldEnvelope)? = Reference.member(before, "kindly")
        else { fail("apply leaves no aps.alert or kindly object") }
        require(Reference.member(alert, "title") == .string(payload.title), "apply sets another title")
        require(Reference.member(alert, "body") == .string(payload.body), "apply sets another body")
        require(Reference.member(envelope, "chat_id") == .string(payload.chatId), "apply sets another kindly.chat_id")
        if let messageId = payload.messageId {
            require(Reference.member(envelope, "message_id") == .string(messageId), "apply sets another kindly.message_id")
        }
        for member in before.members where !Reference.same(member.key, "aps") && !Reference.same(member.key, "kindly") {
            require(Reference.member(after, member.key) == member.value, "apply changes the top-level member \(member.key)")
        }
        let written = ["decrypted", "chat_id", "message_id"]
        for member in oldEnvelope.members where !written.contains(where: { Reference.same($0, member.key) }) {
            require(Reference.member(envelope, member.key) == member.value, "apply changes kindly.\(member.key)")
        }
        switch KindlyPushDecryption.decryptResult(userInfo: applied, using: key, pinnedSenderKeys: reader.keys) {
        case .success(let again): require(again == payload, "the applied push decrypts to another payload")
        case .failure(let failure): fail("the applied push no longer decrypts: \(failure)")
        }
    }
}
