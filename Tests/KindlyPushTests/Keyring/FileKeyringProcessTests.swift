import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// The file keyring written by separate processes (`kindly-push keygen --keyring file`): killed
/// at random moments, and racing each other.
@Suite("File keyring across processes", .offThePool)
struct FileKeyringProcessTests {
    /// `KINDLY_PUSH_BINARY`, else the package's debug build.
    static let binary: String =
        ProcessInfo.processInfo.environment["KINDLY_PUSH_BINARY"]
        ?? packageRoot.appendingPathComponent(".build/debug/kindly-push").path

    @Test(
        "kill -9 at random moments of keygen never leaves a torn key, loses a finished one, or passes a temporary file off as a key")
    func killedWriters() throws {
        let root = try TemporaryFolder()
        let folder = root.path + "/keys"
        // One undisturbed run gives the span of a keygen's life, so that the kills fall all along it.
        let first = try keygen(into: folder)
        var finished = [try #require(first.kid, "keygen did not finish: \(first.errors)")]
        let lifetime = Double(first.duration.components.seconds) + Double(first.duration.components.attoseconds) / 1e18

        for _ in 0..<200 {
            let process = try startKeygen(into: folder)
            Thread.sleep(forTimeInterval: Double.random(in: 0...lifetime * 1.2))
            kill(process.process.processIdentifier, SIGKILL)
            process.process.waitUntilExit()
            let output = process.output.fileHandleForReading.readDataToEndOfFile()
            if process.process.terminationReason == .exit, process.process.terminationStatus == 0, let kid = registrationKid(output) {
                finished.append(kid)
            }
        }

        print("kill -9 test: \(finished.count) of 201 keygens finished before the kill")
        // Every file that looks like a key is one: list reads and checks them all.
        let keyring = FileKeyring(folder: folder)
        let listed = try keyring.list()
        let keyNames = try FileManager.default.contentsOfDirectory(atPath: folder).filter { !$0.hasPrefix(".") }
        #expect(keyNames.count == listed.count, "\(keyNames)")
        #expect(Set(listed.map(\.kid)).isSuperset(of: finished))
        for kid in finished {
            #expect(try keyring.key(for: kid).kid == kid)
        }
    }

    @Test("two processes storing keys at once lose none")
    func racingProcesses() throws {
        let root = try TemporaryFolder()
        let folder = root.path + "/keys"
        let rounds = 20
        var kids: [KeyID] = []
        for _ in 0..<rounds {
            let pair = [try startKeygen(into: folder), try startKeygen(into: folder)]
            for started in pair {
                let output = started.output.fileHandleForReading.readDataToEndOfFile()
                started.process.waitUntilExit()
                #expect(started.process.terminationStatus == 0)
                kids.append(try #require(registrationKid(output)))
            }
        }
        let keyring = FileKeyring(folder: folder)
        #expect(Set(try keyring.list().map(\.kid)) == Set(kids))
        #expect(kids.count == 2 * rounds)
    }

    // MARK: Helpers

    struct Started {
        let process: Process
        let output: Pipe
    }

    private func startKeygen(into folder: String) throws -> Started {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["keygen", "--keyring", "file"]
        var environment = ProcessInfo.processInfo.environment
        environment["KINDLY_PUSH_KEYRING_DIR"] = folder
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        return Started(process: process, output: output)
    }

    private func keygen(into folder: String) throws -> (kid: KeyID?, duration: Duration, errors: String) {
        var environment = ProcessInfo.processInfo.environment
        environment["KINDLY_PUSH_KEYRING_DIR"] = folder
        let (output, duration) = try elapsed { try run(Self.binary, ["keygen", "--keyring", "file"], environment: environment) }
        return (output.status == 0 ? registrationKid(output.standardOutput) : nil, duration, output.errorText)
    }

    /// The kid of the registration JSON that keygen prints once the key is stored.
    private func registrationKid(_ output: Data) -> KeyID? {
        guard let document = try? JSONReader.parse(Array(output)),
            let kid = document.objectValue?["kid"]?.stringValue
        else { return nil }
        return KeyID(base64: kid)
    }
}
