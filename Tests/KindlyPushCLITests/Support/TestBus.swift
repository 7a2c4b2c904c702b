import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A message bus of the test's own (dbus-daemon), where any client may own any name; with
/// `activates`, the bus starts each named service at the first call to its name (D-Bus
/// activation, as a desktop session's bus starts gnome-keyring), its HOME in the bus's folder;
/// `serviceFiles` are service files as they are shipped, by name.
final class TestBus {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kindly-bus-\(UUID().uuidString)").path
    let process = Process()
    let address: String

    init(activates services: [String: String] = [:], serviceFiles: [String: String] = [:]) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createDirectory(atPath: "\(folder)/services", withIntermediateDirectories: true)
        for (name, command) in services {
            try "[D-BUS Service]\nName=\(name)\nExec=\(command)\n".write(
                toFile: "\(folder)/services/\(name).service", atomically: true, encoding: .utf8)
        }
        for (name, contents) in serviceFiles {
            try contents.write(toFile: "\(folder)/services/\(name).service", atomically: true, encoding: .utf8)
        }
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(folder)/bus</listen>
              <auth>EXTERNAL</auth>
              <servicedir>\(folder)/services</servicedir>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        try config.write(toFile: "\(folder)/bus.conf", atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--nofork", "--print-address=1", "--config-file=\(folder)/bus.conf"]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "HOME": folder, "XDG_DATA_HOME": "\(folder)/data", "XDG_RUNTIME_DIR": folder, "XDG_CONFIG_HOME": "\(folder)/config",
        ]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line: [UInt8] = []
        while let byte = try output.fileHandleForReading.read(upToCount: 1)?.first, byte != UInt8(ascii: "\n") { line.append(byte) }
        address = String(decoding: line, as: UTF8.self)
    }

    /// Whether `name` has an owner on the bus now (the bus's NameHasOwner, through gdbus).
    func hasOwner(_ name: String) throws -> Bool {
        try callBus("NameHasOwner", name).hasPrefix("(true,)")
    }

    /// Whether every one of `names` has an owner within `seconds`. A service that takes more than
    /// one name takes them one at a time: the bus answers an activation at the first it asked for.
    func ownersAppear(_ names: [String], seconds: Double = 15) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            if try names.allSatisfy(hasOwner) { return true }
            usleep(20_000)
        } while Date() < deadline
        return false
    }

    /// What the bus answers `method` of org.freedesktop.DBus with `arguments`, through gdbus (its
    /// text, or its error's).
    func callBus(_ method: String, _ arguments: String...) throws -> String {
        let gdbus = Process()
        gdbus.executableURL = URL(fileURLWithPath: "/usr/bin/gdbus")
        gdbus.arguments =
            [
                "call", "--address", address, "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus", "--method",
                "org.freedesktop.DBus.\(method)",
            ] + arguments
        let output = Pipe()
        gdbus.standardOutput = output
        gdbus.standardError = output
        try gdbus.run()
        let answer = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        gdbus.waitUntilExit()
        return answer
    }

    deinit {
        // An activated service ends with its bus (gnome-keyring leaves when its connection goes).
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: folder)
    }
}
