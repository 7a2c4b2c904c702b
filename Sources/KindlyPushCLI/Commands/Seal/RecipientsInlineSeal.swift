package import KindlyPushBase
package import KindlyPushCore

extension SealCommand {
    /// `seal --recipients-inline` seals each input for the device it names.
    package static func make(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) -> any RunnableCommand {
        if arguments[SealingOptions.recipientsInline] { return try RecipientsInlineSeal(arguments, environment: environment) }
        return try SealCommand(arguments, environment: environment)
    }
}

/// `kindly-push seal --recipients-inline`: a stream of pushes for many devices. Each input
/// document is `{"public_key": B64, "plaintext": {...}}`, optionally with `"mode"`,
/// `"placeholder_title"` and `"placeholder_body"` (which override the command's options for that
/// document); each output is the sealed push or, in `--jsonl` mode, an error object on its line.
///
/// Each thread keeps a ``PushSealer`` per recipient (the decoded key, its kid, the document
/// template; version 2 adds its second shared secret there) in an ``LRUCache`` of
/// ``cacheCapacity`` recipients, so that a stream that comes back to a device does that work once.
/// A compact line takes the fast path (``RecipientsInlineCompactLine`` finds the fields, the recipient's sealer seals
/// the plaintext text as it is); anything else is read with the strict reader, and its plaintext
/// is written compactly and sealed by the same sealer, or the general path says why not.
package struct RecipientsInlineSeal: CommandImplementation, DocumentCommand, DocumentProcessor {
    package typealias Declaration = SealCommand

    /// Recipients whose sealers one thread keeps.
    package static let cacheCapacity = 1024

    /// The command's `--mode` and placeholder, for documents that do not give their own.
    package let mode: KindlyPushSealer.Mode
    package let placeholder: KindlyPushSealer.Placeholder
    package let oversize: KindlyPushSealer.Oversize
    /// `--sender-key-file`: every push is version 2 (or version 3 mode_auth) from this sender;
    /// `nil` for version 1 (or version 3 mode_base).
    package let senderKey: SenderKey?
    /// `--wire`, or its default.
    package let version: WireVersion
    package let stream: StreamOptions

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        let sealing = SealingOptions(arguments)
        if sealing.publicKey != nil || sealing.keyFile != nil {
            throw CodedError(.usage, "--recipients-inline reads each device's key from its input: give no --public-key or --key-file")
        }
        (mode, placeholder) = try PlaintextSealing.alertOptions(sealing)
        oversize = PlaintextSealing.oversize(sealing)
        senderKey = try PlaintextSealing.senderKey(sealing)
        version = try PlaintextSealing.wireVersion(sealing, hasSender: senderKey != nil)
        stream = try StreamOptions(arguments, command: Self.name, environment: environment)
    }

    package var inputLimit: Int { PlaintextSealing.inputLimit(oversize) }

    package func makeScratch() -> LRUCache<RecipientKey, PushSealer> { LRUCache(capacity: Self.cacheCapacity) }

    package func process(bytes: UnsafeRawBufferPointer, scratch: inout LRUCache<RecipientKey, PushSealer>, into output: inout [UInt8])
        throws(CodedError)
        -> LineEngine.LineOutcome
    {
        if let line = RecipientsInlineCompactLine(bytes, mode: mode, placeholder: placeholder), let key = line.recipientKey(in: bytes) {
            // A line's own "id" and registration, copied as they are (in the writer's form: what
            // the strict path writes for them; a subscription as the writer wrote it).
            let sealed = try (line.subscription ?? []).withBytes { (subscription) throws(CodedError) -> LineEngine.LineOutcome? in
                let registration = line.registration.map {
                    (line.platform, line.subscription == nil ? UnsafeRawBufferPointer(rebasing: bytes[$0]) : subscription)
                }
                let tags = CorrelationID(
                    id: line.id.map { UnsafeRawBufferPointer(rebasing: bytes[$0]) }, registration: registration, delivery: line.delivery)
                let start = output.count
                tags.appendPushPrefix(to: &output)
                let plaintext = UnsafeRawBufferPointer(rebasing: bytes[line.plaintext])
                let outcome = scratch.withValue(for: key, default: sealer(for: key)) { sealer in
                    Self.sealAndWipe(with: &sealer) { $0.seal(plaintext: plaintext, appendingTo: &output) }
                }
                switch outcome {
                case .sealed:
                    if tags.isTagged { output.append(UInt8(ascii: "}")) }
                    return .success
                case .failed(let error):
                    output.removeSubrange(start...)
                    return try failure(CodedError(.badInput, error.description(for: line.platform)), tags: tags, into: &output)
                case .notJSON, .notObject:
                    // What the compact reading took for the plaintext is not one JSON object (members
                    // may follow it): the line is read whole, for the strict reader's message.
                    output.removeSubrange(start...)
                    return nil
                }
            }
            if let sealed { return sealed }
        }
        let document = try StandardInput.parseObject(bytes)
        return try processWithID(document, scratch: scratch, into: &output)
    }

    package func process(_ document: JSONValue, into output: inout [UInt8]) throws(CodedError) -> LineEngine.LineOutcome {
        try processWithID(document, scratch: LRUCache(capacity: 1), into: &output)
    }

    /// The general path with the line's `"id"`, registration (`"token"`, `"fcm_token"` or
    /// `"subscription"`) and delivery fields: the push as `{"id": ID, "token": TOKEN, "app": …,
    /// "collapse_id": …, "expiration": …, "priority": …, "push": PUSH}` (each when the line has
    /// it), or in line mode the error object with the id and registration after `"error"`.
    /// Without any (or with a member name twice), the output is the push or the error alone.
    private func processWithID(_ document: JSONValue, scratch: LRUCache<RecipientKey, PushSealer>, into output: inout [UInt8])
        throws(CodedError) -> LineEngine.LineOutcome
    {
        guard case .object(let object) = document, !object.hasDuplicateKeys else {
            try process(document, scratch: scratch, into: &output)
            return .success
        }
        let id = object[RecipientsInlineMember.id].map(JSONWriter.compactBytes)
        // The device and its platform, written as `send` takes it (a line that names it wrongly is
        // refused below, where the line is read).
        let device =
            (try? RecipientRegistration.registration(of: object))
            ?? PushPlatform.allCases.lazy.compactMap { (platform) -> (platform: PushPlatform, address: JSONValue)? in
                object[Self.registrationMember(platform)].map { (platform, $0) }
            }.first
        let platform = device?.platform
        let registration = device.map { JSONWriter.compactBytes($0.address) }
        // A field that breaks its rule fails the line below, where the line is read.
        let delivery = (try? DeliveryFields(object)) ?? DeliveryFields()
        guard id != nil || registration != nil || !delivery.isEmpty else {
            try process(document, scratch: scratch, into: &output)
            return .success
        }
        return try (id ?? []).withBytes { (idBytes) throws(CodedError) in
            try (registration ?? []).withBytes { (registrationBytes) throws(CodedError) in
                let tags = CorrelationID(
                    id: id == nil ? nil : idBytes, registration: platform.map { ($0, registrationBytes) }, delivery: delivery)
                let start = output.count
                tags.appendPushPrefix(to: &output)
                do throws(CodedError) {
                    try process(document, scratch: scratch, into: &output)
                    output.append(UInt8(ascii: "}"))
                    return .success
                } catch {
                    output.removeSubrange(start...)
                    return try failure(error, tags: tags, into: &output)
                }
            }
        }
    }

    /// The input and output member that names a device of `platform` (registration section 9.1,
    /// as `send` takes it).
    static func registrationMember(_ platform: PushPlatform) -> String {
        switch platform {
        case .apns: RecipientsInlineMember.token
        case .fcm: RecipientsInlineMember.fcmToken
        case .webPush: RecipientsInlineMember.subscription
        }
    }

    /// A line that fails: in line mode with an `"id"` or a registration, its error object with them
    /// after `"error"` (``LineEngine/LineOutcome/errorObject(_:message:)``); the error itself otherwise.
    private func failure(_ error: CodedError, tags: CorrelationID, into output: inout [UInt8]) throws(CodedError) -> LineEngine.LineOutcome
    {
        guard tags.isCorrelated, stream.isLineMode else { throw error }
        error.appendErrorObject(to: &output) { tags.appendErrorMembers(to: &$0) }
        return .errorObject(error.code, message: error.message)
    }

    /// The general path: the line read with the strict reader, its plaintext checked and sealed
    /// by the recipient's sealer (which refuses a recipient first, as the fast path does).
    private func process(_ document: JSONValue, scratch: LRUCache<RecipientKey, PushSealer>, into output: inout [UInt8]) throws(CodedError)
    {
        let line: RecipientsInlineLine
        do throws(RecipientsInlineError) {
            line = try RecipientsInlineLine(document, mode: mode, placeholder: placeholder)
        } catch {
            throw CodedError(.badInput, error.message)
        }
        let key = RecipientKey(line.recipient, alert: line.alert, platform: line.platform)
        do throws(KindlyPushSealer.SealingError) {
            try scratch.withValue(for: key, default: sealer(for: key)) { (sealer) throws(KindlyPushSealer.SealingError) in
                try Self.sealAndWipe(with: &sealer) { (sealer) throws(KindlyPushSealer.SealingError) in
                    if let refusal = sealer.refusal { throw refusal }
                    try sealer.seal(try KindlyPushSealer.payload(plaintext: line.plaintext), appendingTo: &output)
                }
            }
        } catch {
            throw CodedError(.badInput, error.description(for: line.platform))
        }
    }

    /// Seals with a cached sealer, then zeroes the sealer's buffers: a sealer stays in the cache
    /// for as long as its recipient is among the last 1,024, and its buffers would otherwise keep
    /// that recipient's last message in clear (an evicted entry is freed, not wiped). The cost is
    /// one memzero of a few hundred bytes beside an X25519 and an AEAD.
    private static func sealAndWipe<R, E: Error>(with sealer: inout PushSealer, _ body: (inout PushSealer) throws(E) -> R) throws(E) -> R {
        defer { sealer.wipe() }
        return try body(&sealer)
    }

    /// The sealer for a recipient, kept in the thread's cache: its document template, its
    /// platform's budget and, for version 2, the second shared secret with the sender (computed
    /// once per recipient, wiped when the entry is evicted). A recipient the sender key cannot seal for (a low-order key)
    /// gets a sealer that leaves every line to the general path, which says why.
    private func sealer(for key: RecipientKey) -> PushSealer {
        let mode = key.alert?.mode ?? self.mode
        let placeholder = key.alert?.placeholder ?? self.placeholder
        let budget = key.platform.maximumPayloadSize
        guard let senderKey else {
            return PushSealer(
                recipient: key.publicKey, version: version, mode: mode, placeholder: placeholder, oversize: oversize,
                maximumPayloadSize: budget)
        }
        do throws(KindlyPushSealer.SealingError) {
            let binding = try KindlyPushSealer.binding(of: senderKey, for: key.publicKey)
            return PushSealer(
                recipient: key.publicKey, sender: binding, version: version, mode: mode, placeholder: placeholder, oversize: oversize,
                maximumPayloadSize: budget)
        } catch {
            return PushSealer(recipient: key.publicKey, mode: mode, placeholder: placeholder, refusal: error)
        }
    }
}

/// A line's `"id"` and registration (their JSON text), copied into its output line: before
/// `"push"`, or after `"error"`; and its delivery fields, before `"push"`.
private struct CorrelationID {
    let id: UnsafeRawBufferPointer?
    /// The platform whose member (`"token"`, `"fcm_token"`, `"subscription"`) names the device,
    /// and the member's value.
    let registration: (platform: PushPlatform, value: UnsafeRawBufferPointer)?
    let delivery: DeliveryFields

    var isTagged: Bool { isCorrelated || !delivery.isEmpty }
    /// An error line names the input by these.
    var isCorrelated: Bool { id != nil || registration != nil }

    /// `{"id":ID,"token":TOKEN,"app":…,"push":` (each member when there), or nothing when none is.
    func appendPushPrefix(to output: inout [UInt8]) {
        guard isTagged else { return }
        output.append(UInt8(ascii: "{"))
        appendMembers(to: &output)
        delivery.appendMembers(to: &output)
        output += #""push":"#.utf8
    }

    /// `,"id":ID,"token":TOKEN` without the last comma: after the error object's members.
    func appendErrorMembers(to output: inout [UInt8]) {
        output.append(UInt8(ascii: ","))
        appendMembers(to: &output)
        output.removeLast()
    }

    private func appendMembers(to output: inout [UInt8]) {
        if let id {
            output += #""id":"#.utf8
            output += id
            output.append(UInt8(ascii: ","))
        }
        if let registration {
            JSONWriter.writeString(RecipientsInlineSeal.registrationMember(registration.platform), to: &output)
            output.append(UInt8(ascii: ":"))
            output += registration.value
            output.append(UInt8(ascii: ","))
        }
    }
}

/// What a thread's sealers are kept by: the device's public key, the line's own alert when it
/// gives one (a sealer's document template holds the alert) and the platform (whose budget the
/// sealer holds its pushes to).
package struct RecipientKey: Hashable, Sendable {
    /// The 32 bytes of the public key.
    package let words: SIMD4<UInt64>
    package let alert: LineAlert?
    package let platform: PushPlatform

    package init(_ publicKey: UnsafeRawBufferPointer, alert: LineAlert?, platform: PushPlatform = .apns) {
        precondition(publicKey.count == 32)
        words = SIMD4(
            publicKey.loadUnaligned(fromByteOffset: 0, as: UInt64.self), publicKey.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
            publicKey.loadUnaligned(fromByteOffset: 16, as: UInt64.self), publicKey.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        self.alert = alert
        self.platform = platform
    }

    package init(_ publicKey: DevicePublicKey, alert: LineAlert?, platform: PushPlatform = .apns) {
        self = publicKey.rawRepresentation.withUnsafeBytes { RecipientKey($0, alert: alert, platform: platform) }
    }

    package var publicKey: DevicePublicKey {
        var words = words
        return try! withUnsafeBytes(of: &words) { try DevicePublicKey(rawRepresentation: Array($0)) }
    }
}

extension RecipientsInlineCompactLine {
    /// The cache key of the line's recipient, when its public key is canonical base64 of 32 bytes
    /// and a key that may be sealed for (a few byte comparisons: a non-canonical spelling or the
    /// base point goes to the general path, which says why).
    package func recipientKey(in bytes: UnsafeRawBufferPointer) -> RecipientKey? {
        withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { key -> RecipientKey? in
            guard Base64.quickDecode(UnsafeRawBufferPointer(rebasing: bytes[publicKey]), into: key) == 32,
                X25519.publicKeyProblem(UnsafeRawBufferPointer(key), smallOrder: false) == nil
            else { return nil }
            return RecipientKey(UnsafeRawBufferPointer(key), alert: alert, platform: platform)
        }
    }
}
