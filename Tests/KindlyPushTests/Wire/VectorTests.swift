import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushTesting
import KindlyPushVectors
import Testing

/// Every vector in TestVectors/*.json (made by tools/reference/gen_vectors.py, an independent
/// implementation) run through the library.
@Suite("Test vectors", .offThePool)
struct VectorTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let file: String
        let index: Int
        let vector: TestVector
        var testDescription: String { "\(file) #\(index + 1): \(vector.description)" }
    }

    static let cases: [Case] = {
        guard let files = try? Resources.vectorFiles() else { return [] }
        return files.flatMap { url -> [Case] in
            guard let data = try? Data(contentsOf: url), let vectors = try? TestVector.vectors(inFile: [UInt8](data)) else {
                return []
            }
            return vectors.enumerated().map { Case(file: url.lastPathComponent, index: $0.offset, vector: $0.element) }
        }
    }()

    @Test("every vector file parses, and there are at least 60 vectors covering every reason")
    func filesAreComplete() throws {
        let files = try Resources.vectorFiles()
        for url in files {
            #expect(throws: Never.self, "\(url.lastPathComponent)") { try TestVector.vectors(inFile: [UInt8](Data(contentsOf: url))) }
        }
        #expect(Self.cases.count >= 60)
        let reasons = Set(
            Self.cases.compactMap { item -> DecryptionFailure.Reason? in
                if case .failure(let reason) = item.vector.expected { return reason }
                return nil
            })
        #expect(reasons == Set(DecryptionFailure.Reason.allCases))
        #expect(Self.cases.contains { $0.vector.sealing != nil })
        // Version 2: sealing vectors with a sender key, and vectors read in pinned mode.
        #expect(Self.cases.filter { $0.vector.sealing?.sender != nil }.count >= 40)
        #expect(Self.cases.filter { !$0.vector.pinnedSenderKeys.isEmpty }.count >= 40)
    }

    @Test("the library decrypts each vector to its payload or reason, and re-seals sealing vectors byte for byte", arguments: cases)
    func vector(_ item: Case) {
        #expect(item.vector.failure() == nil)
    }

    @Test("the keyring path gives the same result as the single-key path, with the pins in the keyring or given", arguments: cases)
    func throughKeyring(_ item: Case) {
        let pinned = item.vector.pinnedSenderKeys
        let readers = [
            KindlyPushDecryption(keyring: InMemoryKeyring(keys: [item.vector.deviceKey], pinnedSenders: pinned)),
            KindlyPushDecryption(keyring: InMemoryKeyring(keys: [item.vector.deviceKey]), pinnedSenderKeys: pinned),
            KindlyPushDecryption(keyring: CachingKeyring(InMemoryKeyring(keys: [item.vector.deviceKey], pinnedSenders: pinned))),
        ]
        for reader in readers {
            let result = reader.decryptResult(userInfo: item.vector.apns)
            switch (item.vector.expected, result) {
            case (.payload(let expected), .success(let payload)): #expect(payload.object.hasSameMembers(as: expected))
            case (.failure(let reason), .failure(let failure)): #expect(failure.reason == reason)
            default: Issue.record("expected \(item.vector.expected), got \(result)")
            }
        }
    }
}
