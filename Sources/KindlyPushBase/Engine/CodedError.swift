internal import KindlyPushCore

/// The error codes and exit statuses of docs/spec/streams.md, in one place: the reasons a push
/// does not decrypt (``DecryptionFailure/Reason``, whose spec codes these are), and the
/// command's own failures.
package enum ErrorCode: Sendable, Hashable, CaseIterable {
    /// A reason of docs/spec/wire-format.md sections 5 and 7.3: its code, and its exit status.
    case decryption(DecryptionFailure.Reason)
    /// The command line is wrong.
    case usage
    /// The input is not what the command reads.
    case badInput
    /// Reading, writing, a keyring or a server failed.
    case io

    /// In the order of docs/spec/streams.md's table: the reasons in the order they are checked,
    /// then usage, bad_input and io.
    package static var allCases: [ErrorCode] { DecryptionFailure.Reason.allCases.map(ErrorCode.decryption) + [.usage, .badInput, .io] }

    /// The code of error objects and messages: the reason's spec code, `usage`, `bad_input`, `io`.
    package var rawValue: String {
        switch self {
        case .decryption(let reason): return reason.code
        case .usage: return "usage"
        case .badInput: return "bad_input"
        case .io: return "io"
        }
    }

    /// "1 not_kindly, 2 unsupported_version, …": `codes` with their exit statuses, in numeric order.
    package static func exitStatuses(_ codes: [ErrorCode]) -> String {
        codes.sorted { $0.exitStatus < $1.exitStatus }.map { "\($0.exitStatus) \($0.rawValue)" }.joined(separator: ", ")
    }

    package var exitStatus: Int32 {
        switch self {
        case .decryption(let reason):
            switch reason {
            case .notKindly: return 1
            case .unsupportedVersion: return 2
            case .malformed: return 3
            case .keyUnavailable: return 4
            case .untrustedSender: return 7
            case .authenticationFailed: return 5
            case .badPlaintext: return 6
            }
        case .usage: return 64
        case .badInput: return 65
        case .io: return 74
        }
    }

    /// The CLI code for a decryption reason.
    package init(_ reason: DecryptionFailure.Reason) {
        self = .decryption(reason)
    }
}

/// A failure with its reason code: the command reports it as `kindly-push: CODE: TEXT` on standard
/// error, the line engine as the error object of its line (``jsonObject``), a worker as a dead
/// letter. The message never holds key material.
package struct CodedError: Error, Sendable {
    package let code: ErrorCode
    package let message: String
    /// Whether asking again later may succeed (a locked or unreachable keyring): a Redis worker
    /// leaves such an entry pending and backs off instead of answering it.
    package var isTransient = false
    /// A transient failure that is this input's own (APNs answered 429 or 5xx for this push), not
    /// the worker's (an unreachable server, a locked keyring): a Redis worker counts each round of
    /// such an entry as a delivery, so that --max-deliveries ends it.
    package var countsAsDelivery = false
    /// For a transient failure, the least time before asking again, in milliseconds (an
    /// answer's `retry-after`); nil for the asker's own backoff.
    package var retryAfter: Int?
    /// A `bad_input` text that is the start of a JSON object or array its end cuts short: in
    /// `--jsonl`, a document pretty-printed over several lines (``InputProblem``).
    package var endsInsideDocument = false
    /// The push's failure, when the error is one (the library's stream gives it as it is).
    package var decryptionFailure: DecryptionFailure?

    package init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The `bad_input` error of an input that is no JSON object.
    package init(_ problem: InputProblem) {
        self.init(.badInput, problem.message)
        endsInsideDocument = problem.endsInsideDocument
    }

    package init(_ failure: DecryptionFailure) {
        self.init(ErrorCode(failure.reason), failure.detail)
        decryptionFailure = failure
        isTransient = failure.keyringError?.isTransient == true
    }

    /// `kindly-push: CODE: TEXT`, as standard error shows it.
    package var reportLine: String { "kindly-push: \(code.rawValue): \(message)" }

    /// `kindly-push: CODE: PLACE: TEXT`: the error of one input of a stream that goes on
    /// (`line 3`, `a kept push`), as standard error shows it where no output line carries it
    /// (`notify`'s lines).
    package func reportLine(at place: String) -> String { "kindly-push: \(code.rawValue): \(place): \(message)" }

    /// The one writer of a line's error object (without its newline): `{LEADING…, "error":
    /// {"code", "message"}, TRAILING…}`. `leading`: the members a result names its push by
    /// first (`send`'s `"id"` and device); `trailing` appends members already written as
    /// text, each preceded by its comma (`seal --recipients-inline`'s `"id"` and registration).
    package func appendErrorObject(
        to output: inout [UInt8], leading: [JSONObject.Member] = [], trailing: ((inout [UInt8]) -> Void)? = nil
    ) {
        let error = JSONObject.Member(key: "error", value: ["code": .string(code.rawValue), "message": .string(message)])
        JSONWriter.write(.object(JSONObject(leading + [error])), to: &output)
        guard let trailing else { return }
        output.removeLast()
        trailing(&output)
        output.append(UInt8(ascii: "}"))
    }
}
