import Foundation
import KindlyPush
import KindlyPushCore
import KindlyPushVectors
import Testing

/// Long-lived secrets are locked in RAM and left out of core dumps; reused plaintext buffers are
/// zeroed at the end of a run.
@Suite("Guarded secrets and wiped buffers", .offThePool)
struct GuardedSecretTests {
    /// The `VmFlags` of the mapping of this process that holds `address`, from /proc/self/smaps.
    static func mappingFlags(of address: UnsafeRawPointer) throws -> [String] {
        // /proc files report size 0: read to the end rather than by size.
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/self/smaps"))
        defer { try? handle.close() }
        let text = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        let target = UInt(bitPattern: address)
        var inside = false
        for line in text.split(separator: "\n") {
            if let dash = line.firstIndex(of: "-"), let space = line.firstIndex(of: " "), dash < space,
                let start = UInt(line[..<dash], radix: 16), let end = UInt(line[line.index(after: dash)..<space], radix: 16)
            {
                inside = (start..<end).contains(target)
                continue
            }
            if inside, line.hasPrefix("VmFlags:") {
                return line.dropFirst("VmFlags:".count).split(separator: " ").map(String.init)
            }
        }
        return []
    }

    /// Whether `flags` mark a mapping locked in RAM and left out of core dumps. AddressSanitizer
    /// ignores mlock (its run, tools/test --sanitize, sets ASAN_OPTIONS): there only the latter.
    static func isGuarded(_ flags: [String]) -> Bool {
        let locked = flags.contains("lo") || ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil
        return locked && flags.contains("dd")
    }

    @Test("a device's secret key, however it was made, lives in locked memory left out of core dumps")
    func deviceKeysAreGuarded() throws {
        let folder = NSTemporaryDirectory() + "kindly-guarded-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let generated = DeviceKey.generate()
        try KeyFile.write(generated, to: folder + "/k.json")
        let fromFile = try KeyFile.read(folder + "/k.json")
        let fromText = try DeviceSecretKey(base64: generated.secretKey.withUnsafeBytes { Base64.urlEncoded($0) })
        for (what, key) in [("generated", generated.secretKey), ("key file", fromFile.secretKey), ("base64", fromText)] {
            let flags = try key.withUnsafeBytes { try Self.mappingFlags(of: $0.baseAddress!) }
            #expect(Self.isGuarded(flags), "\(what): not locked in memory and excluded from core dumps (\(flags))")
        }
    }

    @Test("a sender's secret key and the second shared secret of version 2 are guarded too")
    func senderSecretsAreGuarded() throws {
        let sender = SenderKey.generate()
        let device = DeviceKey.generate()
        let deviceSide = try SenderBinding(device: device, sender: sender.publicKey)
        let senderSide = try SenderBinding(sender: sender, recipient: device.publicKey)
        for (what, secret) in [
            ("sender key", sender.secretKey), ("device side", deviceSide.sharedSecret), ("sender side", senderSide.sharedSecret),
        ] {
            let flags = try secret.withUnsafeBytes { try Self.mappingFlags(of: $0.baseAddress!) }
            #expect(Self.isGuarded(flags), "\(what): \(flags)")
        }
        #expect(deviceSide.sharedSecret == senderSide.sharedSecret)
    }

    @Test("a decryptor's reused buffers are all zeros after wipe()")
    func decryptorWipes() throws {
        let key = DeviceKey.generate()
        let push = try KindlyPushSealer.seal(
            try DecryptedPayload(chatId: "c", title: "secret title", body: "secret body"), for: key.publicKey)
        var decryptor = PushDecryptor(KindlyPushDecryption(keyring: InMemoryKeyring(keys: [key])))
        var output: [UInt8] = []
        #expect(push.withUnsafeBytes { decryptor.decrypt($0, appendingTo: &output) } == .decrypted)
        #expect(!decryptor.buffersAreZero)
        decryptor.wipe()
        #expect(decryptor.buffersAreZero)
        // Still usable after a wipe.
        output.removeAll()
        #expect(push.withUnsafeBytes { decryptor.decrypt($0, appendingTo: &output) } == .decrypted)
    }

    @Test("wipeCapacity zeroes the spare capacity too, and keeps count and capacity")
    func arrayWipe() {
        var bytes: [UInt8] = Array("plaintext that was here".utf8)
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: [1, 2])
        let capacity = bytes.capacity
        bytes.wipeCapacity()
        #expect(bytes == [0, 0])
        #expect(bytes.capacity == capacity)
        let spare = bytes.withUnsafeBufferPointer { UnsafeRawBufferPointer(start: $0.baseAddress, count: capacity) }
        #expect(spare.allSatisfy { $0 == 0 })
    }

    @Test("a test vector's secret keys go through wiped buffers: decoded straight into guarded storage")
    func vectorSecretsGuarded() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("TestVectors/ok-basic.json")
        let vectors = try TestVector.vectors(inFile: [UInt8](try Data(contentsOf: url)))
        let vector = try #require(vectors.first)
        #expect(vector.deviceKey.secretKey.storage.isGuarded)
    }
}
