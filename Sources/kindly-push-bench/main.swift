// kindly-push-bench: the in-process part of tools/bench (not installed, not part of the tests).
//
//   kindly-push-bench latency KEY_FILE PUSHES.jsonl
//
// Decrypts every push of the file in one thread through the library, as an app or a service
// that links KindlyPush would, and prints the per-push latency of the whole call, from the
// push's JSON bytes to a checked payload, for the library's two ways:
//   stream  PushDecryptor.decrypt(_:appendingTo:)  (bytes in, the payload's JSON out; what
//           `kindly-push decrypt --jsonl` uses)
//   general JSONReader.parse + KindlyPushDecryption.decrypt(userInfo:)  (a JSONValue in, a
//           DecryptedPayload out)
// as two lines: `stream|general p50_us p99_us mean_us max_us count`.
// A first pass over the pushes warms caches and the key lookup; only the second pass is timed.
//
//   kindly-push-bench async KEY_FILE PUSHES.jsonl JOBS OUTPUT
//
// Decrypts the file through the public async API, as a service that links KindlyPush would:
// its bytes in 64 KiB chunks (`FileChunks`) into
// `KindlyPushDecryption.decryptStream(jsonLines:jobs:)`, each
// result's JSON line and a newline written to OUTPUT (what `kindly-push decrypt --jsonl` prints),
// and prints `async JOBS wall_seconds cpu_seconds count`, timed from the first read to the last
// write (no process start-up).
internal import KindlyPush
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ message: String) -> Never {
    let text = Array("kindly-push-bench: \(message)\n".utf8)
    _ = text.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(1)
}

func nanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

func readLines(_ path: String) -> [[UInt8]] {
    guard let file = fopen(path, "rb") else { fail("cannot open \(path)") }
    defer { fclose(file) }
    var lines: [[UInt8]] = []
    var line: UnsafeMutablePointer<CChar>? = nil
    var capacity = 0
    while true {
        let length = getline(&line, &capacity, file)
        guard length > 0, let line else { break }
        let count = line[length - 1] == 0x0A ? length - 1 : length
        lines.append(Array(UnsafeRawBufferPointer(start: line, count: count)))
    }
    free(line)
    return lines
}

/// One decryption through the general API: bytes in, a checked payload out.
@inline(never)
func decryptGeneral(_ push: [UInt8], with decryption: KindlyPushDecryption) -> Bool {
    guard let document = try? JSONReader.parse(push) else { return false }
    return decryption.decrypt(userInfo: document) != nil
}

/// One decryption through the stream API: bytes in, the payload's JSON out.
@inline(never)
func decryptStream(_ push: [UInt8], with decryptor: inout PushDecryptor, output: inout [UInt8]) -> Bool {
    output.removeAll(keepingCapacity: true)
    return push.withUnsafeBytes { decryptor.decrypt($0, appendingTo: &output) } == .decrypted
}

/// Times `body` once per push (after one untimed pass) and prints the line for `name`.
func measure(_ name: String, _ pushes: [[UInt8]], _ body: ([UInt8]) -> Bool) {
    for push in pushes where !body(push) { fail("a push did not decrypt") }
    var samples = [UInt64](repeating: 0, count: pushes.count)
    for (index, push) in pushes.enumerated() {
        let start = nanoseconds()
        let decrypted = body(push)
        samples[index] = nanoseconds() - start
        if !decrypted { fail("a push did not decrypt") }
    }
    samples.sort()
    func percentile(_ p: Double) -> Double {
        Double(samples[min(samples.count - 1, Int(Double(samples.count) * p))]) / 1000
    }
    let mean = Double(samples.reduce(0, +)) / Double(samples.count) / 1000
    func fixed(_ value: Double) -> String { String((value * 100).rounded() / 100) }
    print(name, fixed(percentile(0.50)), fixed(percentile(0.99)), fixed(mean), fixed(Double(samples.last!) / 1000), samples.count)
}

func latency(keyFile: String, pushesFile: String) {
    // The keyring of the CLI's --key-file, so that the loop measures what the CLI runs.
    let keyring: KeyFileKeyring
    do {
        keyring = try KeyFileKeyring(path: keyFile)
    } catch {
        fail("\(error)")
    }
    let decryption = KindlyPushDecryption(keyring: keyring)
    let pushes = readLines(pushesFile)
    guard !pushes.isEmpty else { fail("no pushes in \(pushesFile)") }
    var decryptor = PushDecryptor(decryption)
    var output: [UInt8] = []
    measure("stream", pushes) { decryptStream($0, with: &decryptor, output: &output) }
    measure("general", pushes) { decryptGeneral($0, with: decryption) }
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

func asyncStream(keyFile: String, pushesFile: String, jobs: Int, outputFile: String) async {
    let keyring: KeyFileKeyring
    do {
        keyring = try KeyFileKeyring(path: keyFile)
    } catch {
        fail("\(error)")
    }
    let input = open(pushesFile, O_RDONLY)
    let output = open(outputFile, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard input >= 0, output >= 0 else { fail("cannot open \(pushesFile) or \(outputFile)") }
    defer {
        close(input)
        close(output)
    }
    let decryption = KindlyPushDecryption(keyring: keyring)
    var buffer: [UInt8] = []
    var count = 0
    func flush() {
        var written = 0
        while written < buffer.count {
            let result = buffer.withUnsafeBytes { write(output, $0.baseAddress! + written, $0.count - written) }
            guard result > 0 else { fail("cannot write \(outputFile)") }
            written += result
        }
        buffer.removeAll(keepingCapacity: true)
    }
    let start = nanoseconds()
    let cpuStart = cpuSeconds()
    // The library's file source: 64 KiB a read, each on a thread of its own.
    do {
        for try await result in decryption.decryptStream(jsonLines: FileChunks(descriptor: input), jobs: jobs) {
            buffer.append(contentsOf: result.json)
            buffer.append(0x0A)
            count += 1
            if buffer.count >= 1 << 16 { flush() }
        }
    } catch {
        fail("\(error)")
    }
    flush()
    let seconds = Double(nanoseconds() - start) / 1e9
    print("async", jobs, seconds, cpuSeconds() - cpuStart, count)
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "latency" where arguments.count == 3:
    latency(keyFile: arguments[1], pushesFile: arguments[2])
case "async" where arguments.count == 5:
    guard let jobs = Int(arguments[3]), jobs >= 1 else { fail("JOBS must be a positive number") }
    await asyncStream(keyFile: arguments[1], pushesFile: arguments[2], jobs: jobs, outputFile: arguments[4])
default:
    fail("usage: kindly-push-bench latency KEY_FILE PUSHES.jsonl | async KEY_FILE PUSHES.jsonl JOBS OUTPUT")
}
