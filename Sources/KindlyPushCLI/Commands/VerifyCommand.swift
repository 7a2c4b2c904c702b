package import KindlyPushBase
internal import KindlyPushCore
internal import KindlyPushVectors

#if canImport(Glibc)
    import Glibc
#endif

/// `kindly-push verify PATH...`: runs test-vector files.
package struct VerifyCommand: RunnableCommand {
    package static let name = "verify"
    package static let arguments = ["<path> ..."]
    package static let abstract = "Run test-vector files and report each failure."
    package static let examples = [
        Example("Run every test vector of a folder", "kindly-push verify TestVectors")
    ]
    package static let discussion = """
        Each path is a vector file or a folder, of which every *.json file (not recursing) is run.
        Every vector is decrypted with its device key (in pinned mode when it has
        pinned_sender_keys) and compared with its expected payload or reason; a sealing vector is
        also re-sealed (version 2 with its sender_secret_key) and compared byte for byte. Prints a
        line for each failure and last "N passed, N failed"; exits 0 only when none failed. Only
        regular files of at most 4 MiB are read; anything else is a failure of its own.
        """
    package static let quiet = StreamOptions.quiet.taken
    package static let help = SharedOptions.help.taken

    package let files: [String]
    package let isQuiet: Bool

    /// The largest vector file read (the committed ones are under 100 KiB): memory stays bounded
    /// whatever a path names.
    package static let maximumFileSize = 4 << 20

    package init(_ arguments: ParsedArguments, environment: CommandEnvironment) throws(CodedError) {
        guard !arguments.positionals.isEmpty else {
            throw CodedError.usage("missing a vector file or folder", command: Self.name)
        }
        var files: [String] = []
        for path in arguments.positionals {
            let status: stat
            do throws(Errno) {
                status = try FileStatus.of(path)
            } catch {
                throw CodedError(.io, "\(path): \(error)")
            }
            if status.st_mode & S_IFMT == S_IFDIR {
                files += try VerifyCommand.jsonFiles(in: path)
            } else {
                files.append(path)
            }
        }
        self.files = files
        isQuiet = arguments[StreamOptions.quiet]
    }

    package static func jsonFiles(in folder: String) throws(CodedError) -> [String] {
        let directory: OpaquePointer
        do throws(Errno) {
            directory = try pointerOrErrno { opendir(folder) }
        } catch {
            throw CodedError(.io, "\(folder): \(error)")
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = PrivateFile.entryName(UnsafeRawPointer(entry))
            if name.hasSuffix(".json"), !name.hasPrefix("."), entry.pointee.d_type != DT_DIR { names.append(name) }
        }
        let prefix = folder.hasSuffix("/") ? folder : folder + "/"
        return names.sorted().map { prefix + $0 }
    }

    package func run() -> Int32 {
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
            do throws(CodedError) {
                let bytes = try VerifyCommand.read(file)
                do throws(TestVector.FormatError) {
                    vectors = try TestVector.vectors(inFile: bytes)
                } catch {
                    throw CodedError(.badInput, "\(file): \(error)")
                }
            } catch {
                failed += 1
                report("FAIL \(Printable.escaped(error.message))\n")
                continue
            }
            for (index, vector) in vectors.enumerated() {
                if let failure = vector.failure() {
                    failed += 1
                    let name = vector.description.isEmpty ? "" : " (\(vector.description))"
                    report("FAIL \(Printable.escaped("\(file) #\(index + 1)\(name): \(failure)"))\n")
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

    /// The bytes of the regular file at `path`, at most ``maximumFileSize`` of them. Opened
    /// without blocking (a FIFO does not wait for a writer) and checked before anything is read:
    /// a device, a FIFO, a folder or a larger file is refused at once.
    package static func read(_ path: String) throws(CodedError) -> [UInt8] {
        let descriptor: Int32
        let status: stat
        do throws(Errno) {
            descriptor = try valueOrErrno { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
            do throws(Errno) {
                status = try FileStatus.of(descriptor: descriptor)
            } catch {
                FileDescriptor(rawValue: descriptor).close()
                throw error
            }
        } catch {
            throw CodedError(.io, "\(path): \(error)")
        }
        defer { FileDescriptor(rawValue: descriptor).close() }
        guard status.st_mode & S_IFMT == S_IFREG else { throw CodedError(.io, "\(path): not a regular file") }
        let limitText = "\(maximumFileSize >> 20) MiB"
        guard status.st_size <= maximumFileSize else { throw CodedError(.io, "\(path): over the \(limitText) limit of a vector file") }
        // One byte more than the limit is read, so that a file that grew since fstat is caught.
        let bytes: [UInt8]
        do throws(Errno) {
            bytes = try FileDescriptor(rawValue: descriptor).readAll(upTo: maximumFileSize, expectedSize: Int(status.st_size))
        } catch {
            throw CodedError(.io, "\(path): \(error)")
        }
        guard bytes.count <= maximumFileSize else { throw CodedError(.io, "\(path): over the \(limitText) limit of a vector file") }
        return bytes
    }
}
