internal import KindlyPush
internal import KindlyPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// Printing whole results to standard output, with failure reported as `io`.
enum Terminal {
    static func printLine(_ value: JSONValue) -> Int32 {
        printLines([value])
    }

    static func printLines(_ values: [JSONValue]) -> Int32 {
        var stdout = OutputStream(descriptor: STDOUT_FILENO)
        for value in values {
            stdout.write(JSONWriter.compactBytes(value) + [0x0A])
        }
        return finish(&stdout)
    }

    static func printText(_ text: String) -> Int32 {
        var stdout = OutputStream(descriptor: STDOUT_FILENO)
        stdout.write(text)
        return finish(&stdout)
    }

    static func finish(_ stdout: inout OutputStream) -> Int32 {
        guard stdout.flush() else {
            Diagnostics.report(CLIError(.io, "cannot write standard output: \(String(cString: strerror(stdout.errorNumber)))"))
            return ErrorCode.io.exitStatus
        }
        return 0
    }
}
