import Foundation
import KindlyPush
import KindlyPushCore

/// Many pushes decrypted by the independent Python implementation (tools/reference/kindly_ref.py:
/// PyPI cryptography and pycryptodome, no libsodium, no Swift), in one Python process.
enum ReferenceDecryption {
    /// Reads `{"sk": B64, "push": TEXT}` lines; writes the decrypted plaintext object, compact, or
    /// `{"reference_error": CODE}`, one line each.
    static let script = """
        import json, sys
        sys.path.insert(0, sys.argv[1])
        import kindly_ref as k
        for line in sys.stdin:
            item = json.loads(line)
            try:
                plain = k.decrypt(k.parse_document(item["push"].encode()), [k.b64decode_canonical(item["sk"])])
                print(k.dumps(plain))
            except k.KindlyError as error:
                print(json.dumps({"reference_error": error.code}))
        """

    /// The plaintext of each push, decrypted with its key's secret, or the reference's error code.
    static func decrypt(_ items: [(key: DeviceKey, push: String)]) throws -> [Result<JSONValue, ReferenceError>] {
        var input = ""
        for item in items {
            let secret = item.key.secretKey.withUnsafeBytes { Base64.urlEncoded($0) }
            let line: JSONValue = ["sk": .string(secret), "push": .string(item.push)]
            input += line.compactText + "\n"
        }
        let output = try CLI.run(
            ["python3", "-c", script, CLI.packageRoot.appendingPathComponent("tools/reference").path], stdin: Array(input.utf8),
            executable: URL(fileURLWithPath: "/usr/bin/env"), timeLimit: 300)
        guard output.status == 0 else { throw ReferenceError(code: "the reference failed: \(output.stderr)") }
        let lines = output.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        guard lines.count == items.count else { throw ReferenceError(code: "the reference wrote \(lines.count) lines for \(items.count)") }
        return try lines.map { line in
            let value = try JSONValue(parsing: String(line))
            if let code = value["reference_error"]?.stringValue { return .failure(ReferenceError(code: code)) }
            return .success(value)
        }
    }

    struct ReferenceError: Error, Equatable, CustomStringConvertible {
        let code: String
        var description: String { code }
    }
}
