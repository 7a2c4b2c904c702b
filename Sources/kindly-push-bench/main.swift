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
//
//   kindly-push-bench webpush-encrypt CORPUS.bin
//
// Web Push's encryption (RFC 8291) in one thread, as tools/lib/bench/limit-webpush.c does it with
// OpenSSL alone, on the same corpus (per message: p256dh (65) || auth (16) || u32le length ||
// plaintext): per message the subscription's keys checked, an ephemeral P-256 key pair, ECDH,
// HKDF and one AES-128-GCM record. Prints `messages seconds rate cpu_seconds` as the C limits do.
//
//   kindly-push-bench webpush-corpus COUNT CORPUS.bin
//
// Writes such a corpus: COUNT subscriptions of fresh keys, plaintexts of 200 to 1,500 bytes.
//
//   kindly-push-bench webpush-interop
//
// The entry of tools/interop-webpush: one JSON request per line on standard input, one JSON
// answer per line on standard output (unpadded base64url throughout):
//   {"op": "encrypt", "p256dh", "auth", "plaintext"}            -> {"message"}
//   {"op": "decrypt", "private_key", "auth", "message"}         -> {"plaintext"} or {"error"}
//   {"op": "vapid", "key_file", "endpoint", "subject", "now"}   -> {"authorization"} or {"error"}
internal import KindlyPush
internal import KindlyPushCore
internal import KindlyPushLibcrypto
internal import KindlyPushWebPush

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

/// The corpus of `webpush-encrypt`: each message's subscription keys and plaintext.
func readWebPushCorpus(_ path: String) -> [(p256dh: [UInt8], auth: [UInt8], plaintext: [UInt8])] {
    guard let file = fopen(path, "rb") else { fail("cannot open \(path)") }
    defer { fclose(file) }
    var messages: [(p256dh: [UInt8], auth: [UInt8], plaintext: [UInt8])] = []
    func read(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        return count == 0 || fread(&bytes, 1, count, file) == count ? bytes : nil
    }
    while let p256dh = read(65) {
        guard let auth = read(16), let length = read(4) else { fail("\(path) ends inside a message") }
        let count = Int(length[0]) | Int(length[1]) << 8 | Int(length[2]) << 16 | Int(length[3]) << 24
        guard let plaintext = read(count) else { fail("\(path) ends inside a message") }
        messages.append((p256dh, auth, plaintext))
    }
    return messages
}

func webPushCorpus(count: Int, path: String) {
    guard let file = fopen(path, "wb") else { fail("cannot write \(path)") }
    defer { fclose(file) }
    let alphabet = Array(#"abcdefghijklmnopqrstuvwxyz ,.:"{}0123456789"#.utf8)
    for _ in 0..<count {
        guard let key = try? P256.PrivateKey.generate() else { fail("cannot make a P-256 key") }
        let length = 200 + Int(Sodium.randomBytes(count: 2).withUnsafeBytes { $0.load(as: UInt16.self) }) % 1301
        let plaintext = Sodium.randomBytes(count: length).map { alphabet[Int($0) % alphabet.count] }
        let record =
            key.publicKey + Sodium.randomBytes(count: 16) + [0, 8, 16, 24].map { UInt8(truncatingIfNeeded: length >> $0) } + plaintext
        guard fwrite(record, 1, record.count, file) == record.count else { fail("cannot write \(path)") }
    }
}

func webPushEncrypt(corpus: String) {
    let messages = readWebPushCorpus(corpus)
    guard !messages.isEmpty else { fail("no messages in \(corpus)") }
    var bytes = 0
    let start = nanoseconds()
    let cpuStart = cpuSeconds()
    for message in messages {
        do {
            let subscription = try WebPushSubscriptionKeys(
                p256dh: message.p256dh, auth: message.auth.withUnsafeBytes { SecureBytes(copying: $0) })
            bytes += try message.plaintext.withUnsafeBytes { try WebPushEncryption.encrypt($0, for: subscription) }.count
        } catch {
            fail("\(error)")
        }
    }
    let seconds = Double(nanoseconds() - start) / 1e9
    guard bytes > 0 else { fail("nothing encrypted") }
    print(messages.count, seconds, Double(messages.count) / seconds, cpuSeconds() - cpuStart)
}

/// One request of `webpush-interop`, answered.
func webPushInterop(_ request: JSONValue) -> JSONValue {
    func bytes(_ name: String) throws -> [UInt8] {
        guard let text = request[name]?.stringValue else { throw WebPushError.keys("no \(name)") }
        return try Base64.decode(text)
    }
    func secret(_ name: String) throws -> SecureBytes { try bytes(name).withUnsafeBytes { SecureBytes(copying: $0) } }
    do {
        switch request["op"]?.stringValue {
        case "encrypt":
            let subscription = try WebPushSubscriptionKeys(p256dh: try bytes("p256dh"), auth: try secret("auth"))
            let message = try bytes("plaintext").withUnsafeBytes { try WebPushEncryption.encrypt($0, for: subscription) }
            return ["message": .string(Base64.urlEncoded(message))]
        case "decrypt":
            let key = try P256.PrivateKey(scalar: try secret("private_key"))
            let plaintext = try bytes("message").withUnsafeBytes {
                try WebPushEncryption.decrypt($0, privateKey: key, auth: try secret("auth"))
            }
            return ["plaintext": .string(plaintext.withUnsafeBytes { Base64.urlEncoded($0) })]
        case "vapid":
            guard let path = request["key_file"]?.stringValue, let endpoint = request["endpoint"]?.stringValue,
                let subject = request["subject"]?.stringValue, let now = request["now"]?.numberValue.flatMap({ Int($0.literal) })
            else { throw WebPushError.keys("a vapid request has key_file, endpoint, subject and now") }
            let key = try VAPIDKeyFile.read(path)
            return ["authorization": .string(try VAPID.authorization(endpoint: endpoint, subject: subject, key: key, now: now))]
        default:
            return ["error": "unknown op"]
        }
    } catch {
        return ["error": .string("\(error)")]
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "latency" where arguments.count == 3:
    latency(keyFile: arguments[1], pushesFile: arguments[2])
case "async" where arguments.count == 5:
    guard let jobs = Int(arguments[3]), jobs >= 1 else { fail("JOBS must be a positive number") }
    await asyncStream(keyFile: arguments[1], pushesFile: arguments[2], jobs: jobs, outputFile: arguments[4])
case "webpush-encrypt" where arguments.count == 2:
    webPushEncrypt(corpus: arguments[1])
case "webpush-corpus" where arguments.count == 3:
    guard let count = Int(arguments[1]), count >= 1 else { fail("COUNT must be a positive number") }
    webPushCorpus(count: count, path: arguments[2])
case "webpush-interop" where arguments.count == 1:
    while let line = readLine(strippingNewline: true) {
        guard let request = try? JSONReader.parse(Array(line.utf8)) else { fail("not a JSON line") }
        // Unbuffered: the script waits for each answer before it sends the next request.
        let answer = JSONWriter.compactBytes(webPushInterop(request)) + [0x0A]
        guard answer.withUnsafeBytes({ write(STDOUT_FILENO, $0.baseAddress, $0.count) }) == answer.count else { fail("cannot write") }
    }
default:
    fail(
        "usage: kindly-push-bench latency KEY_FILE PUSHES.jsonl | async KEY_FILE PUSHES.jsonl JOBS OUTPUT"
            + " | webpush-encrypt CORPUS.bin | webpush-corpus COUNT CORPUS.bin | webpush-interop")
}
