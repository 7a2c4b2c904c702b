package import KindlyPushCore

extension JSONWriter {
    /// The key-file form of an object with one secret: `{BEFORE…,"NAME":"SECRET",AFTER…}` and a
    /// line break, compact, `SECRET` the unpadded base64url of `secretCount` bytes that `encode`
    /// writes into the slot it is given. The whole text is made in wiped memory, so the secret's
    /// encoding never passes through an array or a `String` (device and sender key files, VAPID
    /// key files, the UnifiedPush registration).
    package static func secretObject(
        before: [JSONObject.Member], secretMember: String, secretCount: Int, after: [JSONObject.Member] = [],
        encode: (UnsafeMutableRawBufferPointer) -> Void
    ) -> SecureBytes {
        var head: [UInt8] = []
        write(.object(JSONObject(before)), to: &head)
        head.removeLast()  // the closing brace: the secret member follows
        if !before.isEmpty { head.append(UInt8(ascii: ",")) }
        writeString(secretMember, to: &head)
        head += Array(":\"".utf8)
        var tail: [UInt8] = [UInt8(ascii: "\"")]
        for member in after {
            tail.append(UInt8(ascii: ","))
            writeString(member.key, to: &tail)
            tail.append(UInt8(ascii: ":"))
            write(member.value, to: &tail)
        }
        tail += Array("}\n".utf8)
        let secretLength = Base64.urlEncodedLength(of: secretCount)
        return SecureBytes(count: head.count + secretLength + tail.count) { out in
            UnsafeMutableRawBufferPointer(rebasing: out[..<head.count]).copyBytes(from: head)
            encode(UnsafeMutableRawBufferPointer(rebasing: out[head.count..<(head.count + secretLength)]))
            UnsafeMutableRawBufferPointer(rebasing: out[(head.count + secretLength)...]).copyBytes(from: tail)
        }
    }

    /// ``secretObject(before:secretMember:secretCount:after:encode:)`` of the bytes of `secret`.
    package static func secretObject(
        before: [JSONObject.Member], secretMember: String, secret: SecureBytes, after: [JSONObject.Member] = []
    ) -> SecureBytes {
        secretObject(before: before, secretMember: secretMember, secretCount: secret.count, after: after) { slot in
            secret.withUnsafeBytes { Base64.urlEncode($0, into: slot) }
        }
    }
}
