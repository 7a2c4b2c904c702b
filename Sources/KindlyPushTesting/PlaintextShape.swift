package import KindlyPush

/// The independent statement of what ``DecryptedPayload/isCompact(_:)`` takes as compact, for the
/// tests and the fuzz target that check the reader against the tree path: the writer writes the
/// object as `text`, every member's value is a scalar (nested values need the duplicate rule at
/// every depth, the tree's), `sent_at` is digits alone, and there are at most 16 members.
package enum PlaintextShape {
    package static func isCompact(_ object: JSONObject, text: some Sequence<UInt8>) -> Bool {
        let scalars =
            object.members.count <= 16
            && object.members.allSatisfy {
                switch $0.value {
                case .object, .array: return false
                case .number(let number) where $0.key == KindlyKey.sentAt: return number.literal.allSatisfy { ("0"..."9").contains($0) }
                default: return true
                }
            }
        return scalars && JSONWriter.compactBytes(.object(object)).elementsEqual(text)
    }
}
