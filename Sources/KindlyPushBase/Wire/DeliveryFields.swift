internal import KindlyPushCore

/// What a backend says of one push's delivery, beside the push (wire-format section 9): the app
/// of the gateway's configuration that sends it, its collapse id, its expiration and its
/// priority. `seal --recipients-inline` checks them and carries them to its output line; `send`
/// reads them there and maps them to the platform's headers (section 9.2 for APNs).
package struct DeliveryFields: Sendable, Equatable {
    /// `"app"`: the app of `send --config`'s file (its `default_app` when absent).
    package var app: String?
    /// `"collapse_id"`: a later push with the same id replaces this one if not yet shown.
    package var collapseID: String?
    /// `"expiration"`: Unix seconds after which the push is worth nothing.
    package var expiration: Int?
    /// `"priority"`: 10 (deliver now) or 5 (when the device's power allows).
    package var priority: Int?

    /// The members' names, in the order an output line carries them.
    package static let app = "app"
    package static let collapseID = "collapse_id"
    package static let expiration = "expiration"
    package static let priority = "priority"
    package static let names = [app, collapseID, expiration, priority]

    /// The longest app name, in bytes (letters, digits, `.`, `_` and `-`).
    package static let maximumAppNameSize = 64
    /// APNs's limit for `apns-collapse-id`, in bytes.
    package static let maximumCollapseIDSize = 64
    /// The latest expiration taken: the largest 32-bit Unix time.
    package static let latestExpiration = Int(UInt32.max)
    /// The priorities of section 9.
    package static let priorities: Set<Int> = [5, 10]

    /// Why a member is refused: the line's `bad_input` message.
    package struct Refusal: Error, Sendable, Equatable {
        package let message: String
    }

    package init(app: String? = nil, collapseID: String? = nil, expiration: Int? = nil, priority: Int? = nil) {
        self.app = app
        self.collapseID = collapseID
        self.expiration = expiration
        self.priority = priority
    }

    /// The fields of a document read by the strict reader (absent members: `nil`).
    package init(_ object: JSONObject) throws(Refusal) {
        if let value = object[Self.app] {
            guard case .string(let text) = value else { throw Refusal(message: "\"app\" is not a string") }
            app = try Self.checkedApp(text)
        }
        if let value = object[Self.collapseID] {
            guard case .string(let text) = value else { throw Refusal(message: "\"collapse_id\" is not a string") }
            collapseID = try Self.checkedCollapseID(text)
        }
        if let value = object[Self.expiration] {
            guard case .number(let number) = value, let seconds = number.integerValue(in: 0...Int64(Self.latestExpiration)) else {
                throw Refusal(message: Self.expirationRule)
            }
            expiration = Int(seconds)
        }
        if let value = object[Self.priority] {
            guard case .number(let number) = value, let level = number.integerValue(in: 0...10), Self.priorities.contains(Int(level)) else {
                throw Refusal(message: Self.priorityRule)
            }
            priority = Int(level)
        }
    }

    static let expirationRule = "\"expiration\" is a whole number of Unix seconds from 0 to \(latestExpiration)"
    static let priorityRule = "\"priority\" is 10 (deliver now) or 5 (when the device's power allows)"

    /// An app's name as given, or why it is not one: 1 to 64 letters, digits, `.`, `_` and `-`
    /// (the names of `send --config`'s `apps`).
    package static func checkedApp(_ text: String) throws(Refusal) -> String {
        guard isAppName(text) else {
            throw Refusal(message: "\"app\" is 1 to \(maximumAppNameSize) letters, digits, '.', '_' or '-' (an app of send --config)")
        }
        return text
    }

    /// Whether `text` may name an app.
    package static func isAppName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maximumAppNameSize
            && text.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == UInt8(ascii: ".")
                    || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
            }
    }

    /// A collapse id as given, or why it is not one: a header's value, so no C0 or C1 control,
    /// line separator or bidirectional control, and at most APNs's 64 bytes.
    package static func checkedCollapseID(_ text: String) throws(Refusal) -> String {
        guard isPrintable(text, maximumSize: maximumCollapseIDSize) else {
            throw Refusal(message: "\"collapse_id\" is 1 to \(maximumCollapseIDSize) bytes of printable text")
        }
        return text
    }

    /// 1 to `maximumSize` bytes with no character that ``Printable`` escapes.
    package static func isPrintable(_ text: String, maximumSize: Int) -> Bool {
        !text.isEmpty && text.utf8.count <= maximumSize && !text.unicodeScalars.contains(where: Printable.needsEscape)
    }

    /// The fields of a compact line, from the ranges of their values in `bytes` (a string with no
    /// escape, a number of digits only); `nil` when one is anything else or breaks its rule, for
    /// the strict reader to decide and explain.
    package init?(
        compact bytes: UnsafeRawBufferPointer, app: Range<Int>?, collapseID: Range<Int>?, expiration: Range<Int>?, priority: Range<Int>?
    ) {
        func text(_ range: Range<Int>?) -> String?? {
            guard let range else { return .some(nil) }
            let raw = UnsafeRawBufferPointer(rebasing: bytes[range])
            guard !raw.contains(UInt8(ascii: "\\")) else { return nil }
            return .some(String(decoding: raw, as: UTF8.self))
        }
        func digits(_ range: Range<Int>?) -> Int?? {
            guard let range else { return .some(nil) }
            let raw = UnsafeRawBufferPointer(rebasing: bytes[range])
            guard (1...10).contains(raw.count), raw.allSatisfy({ (0x30...0x39).contains($0) }), raw.count == 1 || raw[0] != 0x30 else {
                return nil
            }
            return .some(raw.reduce(0) { $0 * 10 + Int($1 - 0x30) })
        }
        guard case .some(let app) = text(app), case .some(let collapseID) = text(collapseID),
            case .some(let expiration) = digits(expiration), case .some(let priority) = digits(priority)
        else { return nil }
        if let app, !Self.isAppName(app) { return nil }
        if let collapseID, !Self.isPrintable(collapseID, maximumSize: Self.maximumCollapseIDSize) { return nil }
        if let expiration, expiration > Self.latestExpiration { return nil }
        if let priority, !Self.priorities.contains(priority) { return nil }
        self.init(app: app, collapseID: collapseID, expiration: expiration, priority: priority)
    }

    /// Whether no field is given.
    package var isEmpty: Bool { app == nil && collapseID == nil && expiration == nil && priority == nil }

    /// `"app":…,"collapse_id":…,"expiration":…,"priority":…,` (each member given, each followed
    /// by a comma), as the project's writer writes them.
    package func appendMembers(to output: inout [UInt8]) {
        if let app { Self.appendMember(Self.app, .string(app), to: &output) }
        if let collapseID { Self.appendMember(Self.collapseID, .string(collapseID), to: &output) }
        if let expiration { Self.appendMember(Self.expiration, .number(JSONNumber(expiration)), to: &output) }
        if let priority { Self.appendMember(Self.priority, .number(JSONNumber(priority)), to: &output) }
    }

    private static func appendMember(_ name: String, _ value: JSONValue, to output: inout [UInt8]) {
        JSONWriter.writeString(name, to: &output)
        output.append(UInt8(ascii: ":"))
        output += JSONWriter.compactBytes(value)
        output.append(UInt8(ascii: ","))
    }
}
