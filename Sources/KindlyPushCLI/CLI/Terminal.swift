package import KindlyPushBase
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Printing whole results to standard output, with failure reported as `io`.
package enum Terminal {
    package static func printLine(_ value: JSONValue) -> Int32 {
        printLines([value])
    }

    package static func printLines(_ values: [JSONValue]) -> Int32 {
        var stdout = OutputStream(descriptor: STDOUT_FILENO)
        for value in values {
            stdout.write(JSONWriter.compactBytes(value) + [0x0A])
        }
        return finish(&stdout)
    }

    package static func printText(_ text: String) -> Int32 {
        var stdout = OutputStream(descriptor: STDOUT_FILENO)
        stdout.write(text)
        return finish(&stdout)
    }

    /// Flushes standard output; any failure to write is `io` (74), except a closed pipe
    /// (`EPIPE`: `| head -1` has read what it wanted), which ends the run quietly with status 0,
    /// as `cat` ends without a message (docs/spec/streams.md, "Input and output").
    package static func finish(_ stdout: inout OutputStream) -> Int32 {
        guard stdout.flush() else {
            let failure = stdout.failure ?? .ioError
            if failure == .brokenPipe { return 0 }
            Diagnostics.report(CodedError(.io, "cannot write standard output: \(failure)"))
            return ErrorCode.io.exitStatus
        }
        return 0
    }
}
