import Foundation
import KindlyPush
import KindlyPushCore
import Testing

/// The package's root folder, from this file's path.
let packageRoot: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // Keyring
    .deletingLastPathComponent()  // KindlyPushTests
    .deletingLastPathComponent()  // Tests
    .deletingLastPathComponent()

/// The outcome of a finished child process. Output is kept as bytes, never turned into text
/// wholesale, since some tools print secrets.
struct ProcessOutput {
    let status: Int32
    let standardOutput: Data
    let standardError: Data

    var errorText: String { String(decoding: standardError, as: UTF8.self) }

    /// The lines of standard output that start with one of `prefixes`, as text.
    func lines(startingWith prefixes: [String]) -> [String] {
        standardOutput.split(separator: UInt8(ascii: "\n")).compactMap { line in
            let bytes = Array(line)
            guard prefixes.contains(where: { bytes.starts(with: Array($0.utf8)) }) else { return nil }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}

/// Runs `executable` to completion.
func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, input: Data? = nil) throws -> ProcessOutput {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let output = Pipe()
    let errors = Pipe()
    let standardInput = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = standardInput
    try process.run()
    if let input { standardInput.fileHandleForWriting.write(input) }
    try standardInput.fileHandleForWriting.close()
    // Read both pipes to their end before waiting, so that a chatty child cannot fill one and stall.
    let errorData = DataBox()
    let errorsRead = DispatchSemaphore(value: 0)
    Thread {
        errorData.data = errors.fileHandleForReading.readDataToEndOfFile()
        errorsRead.signal()
    }.start()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    errorsRead.wait()
    process.waitUntilExit()
    return ProcessOutput(status: process.terminationStatus, standardOutput: outputData, standardError: errorData.data)
}

/// Bytes handed from a reader thread to the thread that waits for it (the semaphore orders the two).
private final class DataBox: @unchecked Sendable {
    var data = Data()
}

/// How long `body` takes.
func elapsed<T>(_ body: () throws -> T) rethrows -> (result: T, duration: Duration) {
    let clock = ContinuousClock()
    let start = clock.now
    let result = try body()
    return (result, clock.now - start)
}

/// Runs `body` and returns the keyring error it threw, or nil when it threw none.
func keyringError<T>(_ body: () throws -> T) -> KeyringError? {
    do {
        _ = try body()
        return nil
    } catch let error as KeyringError {
        return error
    } catch {
        Issue.record("threw \(error), which is not a KeyringError")
        return nil
    }
}

/// A fresh folder under the system's temporary folder, removed when the test ends.
final class TemporaryFolder {
    let path: String

    init(_ name: String = "kindly-push-test") throws {
        var template = Array("\(NSTemporaryDirectory())/\(name).XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        path = String(cString: made)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A visible push sealed for `key`, as the device receives it.
func sealedPush(for key: DeviceKey, chat: String = "c-1") throws -> JSONValue {
    let plaintext: JSONValue = .object(
        JSONObject([
            .init(key: "chat_id", value: .string(chat)),
            .init(key: "title", value: .string("Anna")),
            .init(key: "body", value: .string("Hi!")),
        ]))
    let bytes = try KindlyPushSealer.seal(plaintext: plaintext, for: key.publicKey)
    return try JSONReader.parse(bytes)
}

/// The reason decrypting `push` with `keyring` failed, or nil when it decrypted.
func decryptionFailure(_ push: JSONValue, with keyring: any Keyring) -> DecryptionFailure.Reason? {
    switch KindlyPushDecryption(keyring: keyring).decryptResult(userInfo: push) {
    case .success: return nil
    case .failure(let failure): return failure.reason
    }
}

/// Runs `body(index)` on `count` threads at once and returns what they threw.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) -> [String] {
    let failures = Locked<[String]>([])
    let group = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    for index in 0..<count {
        group.enter()
        Thread {
            start.wait()  // all threads begin together, for the most overlap
            do { try body(index) } catch { failures.withLock { $0.append("thread \(index): \(error)") } }
            group.leave()
        }.start()
    }
    for _ in 0..<count { start.signal() }
    group.wait()
    return failures.withLock { $0 }
}
