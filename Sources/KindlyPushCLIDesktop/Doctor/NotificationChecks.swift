internal import KindlyPush
internal import KindlyPushCLI
internal import KindlyPushCore
internal import KindlyPushDesktop

/// The desktop notification server that `kindly-push notify` shows banners through. It plays no
/// part in decrypting: its absence is a warning where there is a session bus, and nothing to do
/// where there is none (a server).
enum NotificationChecks {
    /// `notification-server`: its name, vendor, version, specification version and capabilities.
    static func server(_ context: DoctorContext) -> [DoctorCheck] {
        switch context.notificationServer {
        case .noBus:
            return [DoctorCheck("notification-server", .ok, "not used: no session bus (kindly-push notify needs a desktop session)")]
        case .failed(let error):
            return [
                DoctorCheck(
                    "notification-server", .warning, "kindly-push notify cannot show banners here: \(error)",
                    action: "start the desktop's notification server (or dunst, mako) on the session bus")
            ]
        case .found(let server, let capabilities):
            let sorted = capabilities.sorted()
            let details: [JSONObject.Member] = [
                .init(key: "name", value: .string(server.name)), .init(key: "vendor", value: .string(server.vendor)),
                .init(key: "version", value: .string(server.version)),
                .init(key: "specification_version", value: .string(server.specificationVersion)),
                .init(key: "capabilities", value: .array(sorted.map { .string($0) })),
            ]
            let message =
                "\(server.name) \(server.version) (\(server.vendor)), specification \(server.specificationVersion); capabilities: "
                + (sorted.isEmpty ? "none" : sorted.joined(separator: ", "))
            guard capabilities.contains("actions") else {
                return [
                    DoctorCheck(
                        "notification-server", .warning, message + "; no actions, so a click on a banner cannot open its chat",
                        action: "use a notification server that offers actions (GNOME Shell, KDE Plasma, dunst, mako)", details: details)
                ]
            }
            return [DoctorCheck("notification-server", .ok, message, details: details)]
        }
    }
}
