/// `--summary`: how many output lines each result code had (`ok` for a result, the error's code
/// for an error object), counted from each line's outcome as the runner makes it.
package struct ResultCounts: Sendable {
    package private(set) var lines = 0
    private var results = 0
    /// The codes met, in the order met; a run meets a few, so a list.
    private var errors: [(code: ErrorCode, count: Int)] = []

    package init() {}

    /// Counts one output line: a result (`nil`), or an error object with `code`.
    package mutating func count(_ code: ErrorCode?) {
        lines += 1
        guard let code else {
            results += 1
            return
        }
        if let index = errors.firstIndex(where: { $0.code == code }) {
            errors[index].count += 1
        } else {
            errors.append((code, 1))
        }
    }

    /// Adds the counts of `other` (one chunk's lines).
    package mutating func add(_ other: ResultCounts) {
        lines += other.lines
        results += other.results
        for (code, count) in other.errors {
            if let index = errors.firstIndex(where: { $0.code == code }) {
                errors[index].count += count
            } else {
                errors.append((code, count))
            }
        }
    }

    /// Back to no line counted, keeping the storage.
    package mutating func removeAll() {
        lines = 0
        results = 0
        errors.removeAll(keepingCapacity: true)
    }

    /// The lines whose output is an error object.
    package var failed: Int { lines - results }

    /// Said at the end of a run without `--summary` in which a line failed, so that a run whose
    /// every line failed does not end as quietly as one that went well (`--jsonl` exits 0 when
    /// every line was read): `1000 of 1000 lines failed (1000 key_unavailable); each has its
    /// error line in the output`.
    package var failureNote: String? {
        guard failed > 0 else { return nil }
        let codes = errorCounts.joined(separator: ", ")
        return "\(failed) of \(Self.count(lines, "line")) failed (\(codes)); each has its error line in the output"
    }

    /// `summary: 1000 lines: 998 ok, 2 bad_input` (codes in the order of docs/spec/streams.md's table).
    package var line: String {
        "summary: \(Self.count(lines, "line")): " + ((results > 0 ? ["\(results) ok"] : []) + errorCounts).joined(separator: ", ")
    }

    /// `2 bad_input` for each code met, in the order of docs/spec/streams.md's table.
    private var errorCounts: [String] {
        ErrorCode.allCases.compactMap { code in errors.first { $0.code == code }.map { "\($0.count) \(code.rawValue)" } }
    }

    /// `1 line`, `7 lines`.
    private static func count(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }
}
