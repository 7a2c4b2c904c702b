import Foundation
import KindlyPushBase
import Testing

/// Reading a folder's names (the sweep of killed runs' files, `verify`, `doctor`).
@Suite("Folder entries", .offThePool)
struct FolderEntriesTests {
    @Test("every name of a large folder, short and long, is read in place: no record is read past its end (the sanitized pass checks)")
    func namesOfALargeFolder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-entries-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // Names of 1 to 60 bytes: getdents' buffers end on records of every length, among them
        // short ones whose 256-byte d_name field would run past the buffer.
        var expected = Set<String>()
        for index in 0..<3000 {
            let name = String(index) + String(repeating: "n", count: index % 60)
            expected.insert(name)
            #expect(FileManager.default.createFile(atPath: folder.appendingPathComponent(name).path, contents: nil))
        }
        let names = try PrivateFile.entryNames(in: folder.path)
        #expect(Set(names) == expected)
        #expect(names.count == expected.count)
    }
}
