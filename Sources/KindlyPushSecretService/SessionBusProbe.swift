internal import CGLib
internal import CSecretShim
internal import KindlyPush
internal import KindlyPushCore

extension SecretServiceKeyring {
    /// What the session bus offers, as `kindly-push --keyring auto` and `kindly-push doctor` see it.
    package enum SessionBusProbe: Sendable, Equatable {
        /// No bus address: neither given nor in `DBUS_SESSION_BUS_ADDRESS`.
        case noAddress
        /// The bus could not be reached: nothing listens there, or the connection failed.
        case unreachable(String)
        /// The bus, or the Secret Service on it, is there but did not answer within the time
        /// budget: it hangs, or is slow. It may hold keys that a fallback would not see.
        case timedOut(String)
        /// The bus answers, but no Secret Service runs on it and none can be started.
        case noSecretService
        /// The bus answers and has the Secret Service running.
        case available
        /// The bus answers and has no Secret Service running, but starts one at the first call
        /// to it (D-Bus activation: gnome-keyring's service file). `auto` takes it as offered;
        /// doctor does not make that first call (it would start the daemon, locked).
        case activatable

        /// Whether the bus offers the Secret Service, running or started at the first call:
        /// what `auto` decides by.
        package var offersSecretService: Bool { self == .available || self == .activatable }
    }

    /// Asks the bus at `busAddress` (else `DBUS_SESSION_BUS_ADDRESS`) whether it answers within
    /// `timeout` and offers the Secret Service. Never prompts and never starts anything itself.
    /// ``sessionBusAnswers(busAddress:timeout:)`` is true exactly when this offers the Secret Service (``SessionBusProbe/offersSecretService``).
    package static func probeSessionBus(busAddress: String? = nil, timeout: Duration = defaultProbeTimeout) -> SessionBusProbe {
        guard let address = busAddress ?? environmentBusAddress() else { return .noAddress }
        let deadline = Deadline(timeout)
        var error: UnsafeMutablePointer<GError>?
        guard let connection = kps_connection_open(address, deadline.cancellable, &error) else {
            return probeFailure(error, timeout: timeout)
        }
        defer { BusConnection.close(connection) }
        let state = kps_bus_name_state(connection, busName, deadline.cancellable, &error)
        if error != nil { return probeFailure(error, timeout: timeout) }
        switch state {
        case KPS_NAME_RUNNING: return .available
        case KPS_NAME_ACTIVATABLE: return .activatable
        default: return .noSecretService
        }
    }

    /// What a failed probe's error means (freed here): the budget ran out, or the bus is not there.
    private static func probeFailure(_ error: UnsafeMutablePointer<GError>?, timeout: Duration) -> SessionBusProbe {
        guard let error else { return .unreachable("no detail") }
        defer { g_error_free(error) }
        if kps_error_kind(error) == KPS_ERROR_CANCELLED { return .timedOut("it did not answer within \(timeout.messageText)") }
        return .unreachable(error.pointee.message.map { String(cString: $0) } ?? "no detail")
    }

    /// The version of libsecret's headers the package was built with. (libsecret 0.20 has no
    /// call that gives the version at run time; its shared library keeps the same soname.)
    package static var libsecretVersion: String {
        var major: guint = 0
        var minor: guint = 0
        var micro: guint = 0
        kps_libsecret_version(&major, &minor, &micro)
        return "\(major).\(minor).\(micro)"
    }
}
