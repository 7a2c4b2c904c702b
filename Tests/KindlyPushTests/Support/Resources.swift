import Foundation
import KindlyPush
import KindlyPushCore

/// Files the tests read, found from this source file's path as swift-crypto finds its
/// Wycheproof vectors, so that tests run from any working folder.
enum Resources {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Support
        .deletingLastPathComponent()  // KindlyPushTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    static let testVectors = packageRoot.appendingPathComponent("TestVectors")

    /// A file of TestVectors/ read with the project's strict reader.
    static func json(_ relativePath: String) throws -> JSONValue {
        let data = try Data(contentsOf: testVectors.appendingPathComponent(relativePath))
        return try JSONReader.parse([UInt8](data))
    }

    /// Every Kindly vector file (`TestVectors/*.json`), sorted.
    static func vectorFiles() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: testVectors, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }
}

/// Hex for Wycheproof's fields.
func bytes(hex: String) -> [UInt8] {
    var result: [UInt8] = []
    var iterator = hex.utf8.makeIterator()
    while let high = iterator.next(), let low = iterator.next() {
        result.append(UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)!)
    }
    return result
}

extension JSONValue {
    subscript(_ key: String) -> JSONValue? { objectValue?[key] }
    var arrayValue: [JSONValue] { if case .array(let elements) = self { return elements } else { return [] } }
}
