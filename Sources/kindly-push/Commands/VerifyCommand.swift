internal import KindlyPush
internal import KindlyPushCore
internal import KindlyPushVectors

#if canImport(Glibc)
    import Glibc
#endif

/// `kindly-push verify PATH...`: runs test-vector files.
struct VerifyCommand: Command {
    static let name = "verify"
    static let arguments = ["<path> ..."]
    static let abstract = "Run test-vector files and report each failure."
    static let discussion = """
        Each path is a vector file or a folder, of which every *.json file (not recursing) is run.
        Every vector is decrypted with its device key (in pinned mode when it has
        pinned_sender_keys) and compared with its expected payload or reason; a sealing vector is
        also re-sealed (version 2 with its sender_secret_key) and compared byte for byte. Prints a
        line for each failure and last "N passed, N failed"; exits 0 only when none failed.
        """
    static let options: [OptionSpec] = [SharedOptions.quiet, SharedOptions.help]

    let files: [String]
    let isQuiet: Bool

    init(_ arguments: ParsedArguments, environment: [String: String]) throws(CLIError) {
        guard !arguments.positionals.isEmpty else {
            throw CLIError(.usage, "missing a vector file or folder (see 'kindly-push verify --help')")
        }
        var files: [String] = []
        for path in arguments.positionals {
            var status = stat()
            guard stat(path, &status) == 0 else { throw CLIError(.io, "\(path): \(String(cString: strerror(errno)))") }
            if status.st_mode & S_IFMT == S_IFDIR {
                files += try VerifyCommand.jsonFiles(in: path)
            } else {
                files.append(path)
            }
        }
        self.files = files
        isQuiet = arguments.has("--quiet")
    }

    static func jsonFiles(in folder: String) throws(CLIError) -> [String] {
        guard let directory = opendir(folder) else { throw CLIError(.io, "\(folder): \(String(cString: strerror(errno)))") }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(".json"), !name.hasPrefix("."), entry.pointee.d_type != DT_DIR { names.append(name) }
        }
        let prefix = folder.hasSuffix("/") ? folder : folder + "/"
        return names.sorted().map { prefix + $0 }
    }

    func run() -> Int32 {
        var stdout = OutputStream(descriptor: STDOUT_FILENO)
        var progress = ProgressLine(quiet: isQuiet, noun: "vectors")
        var passed = 0
        var failed = 0
        /// A failure line: on a terminal, the progress line is cleared first so that they do not mix.
        func report(_ line: String) {
            progress.clear()
            stdout.write(line)
            if progress.isShown { stdout.flush() }
        }
        for file in files {
            let vectors: [TestVector]
            do throws(CLIError) {
                let bytes = try VerifyCommand.read(file)
                do throws(TestVector.FormatError) {
                    vectors = try TestVector.vectors(inFile: bytes)
                } catch {
                    throw CLIError(.badInput, "\(file): \(error)")
                }
            } catch {
                failed += 1
                report("FAIL \(error.message)\n")
                continue
            }
            for (index, vector) in vectors.enumerated() {
                if let failure = vector.failure() {
                    failed += 1
                    let name = vector.description.isEmpty ? "" : " (\(vector.description))"
                    report("FAIL \(file) #\(index + 1)\(name): \(failure)\n")
                } else {
                    passed += 1
                }
                progress.update(count: passed + failed)
            }
        }
        progress.clear()
        stdout.write("\(passed) passed, \(failed) failed\n")
        let status = Terminal.finish(&stdout)
        return status != 0 ? status : (failed == 0 ? 0 : 1)
    }

    static func read(_ path: String) throws(CLIError) -> [UInt8] {
        guard let file = fopen(path, "rb") else { throw CLIError(.io, "\(path): \(String(cString: strerror(errno)))") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress!, 1, $0.count, file) }
            if count == 0 { break }
            bytes += chunk[0..<count]
        }
        guard ferror(file) == 0 else { throw CLIError(.io, "\(path): read failed") }
        return bytes
    }
}
