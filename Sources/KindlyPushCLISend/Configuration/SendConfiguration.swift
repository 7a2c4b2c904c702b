package import KindlyPushBase
internal import KindlyPushCLI
internal import KindlyPushCore
package import KindlyPushSend

#if canImport(Glibc)
    import Glibc
#endif

/// `send --config FILE`: the apps one gateway serves, read from YAML (the format gorush and
/// Sygnal use) and checked whole before anything is sent. Its shape (docs/running-at-scale.md,
/// "Several apps from one file"):
///
/// ```yaml
/// default_app: chat
/// apps:
///   chat:
///     apns: {team_id: TEAM123456, key_id: ABC123DEFG, key_file: /etc/kindly-push/AuthKey_ABC123DEFG.p8,
///            topic: ai.kindly.example, url: https://api.push.apple.com, ca_file: /path/ca.pem, connections: 3}
///     fcm: {service_account_file: /etc/kindly-push/firebase.json, url: https://fcm.googleapis.com, ca_file: /path/ca.pem,
///           connections: 2}
///     webpush: {vapid_key_file: /etc/kindly-push/vapid.json, subject: "mailto:ops@example.com",
///               ca_file: /path/ca.pem, connections: 2, max_push_services: 64, allow_private_addresses: false,
///               allowed_origins: ["https://fcm.googleapis.com", "https://*.push.services.mozilla.com"]}
/// ```
///
/// Secrets only by path: the file names key files, whose rules are every key file's (regular,
/// the user's, mode 0600). An unknown key is refused with its place, so that a misspelt option
/// is never silently dropped.
package struct SendConfiguration: Sendable {
    /// One app: its name and where its pushes go.
    package struct App: Sendable {
        package var name: String
        package var apns: APNs?
        package var webPush: WebPush?
        package var fcm: FCM?
        /// Where the app starts in the file (`LINE:COLUMN`).
        package var place: String
    }

    /// An app's APNs section.
    package struct APNs: Sendable {
        package var teamID: String
        package var keyID: String
        package var keyFile: String
        package var topic: String
        /// `https://HOST[:PORT]`; APNs's production server when not given.
        package var serverURL: String
        package var caFile: String?
        /// HTTP/2 connections to the server (1 when not given).
        package var connections: Int
    }

    /// An app's Web Push section (wire-format section 9.4).
    package struct WebPush: Sendable {
        /// The VAPID key file (`kindly-push vapid-keygen --key-file PATH`).
        package var vapidKeyFile: String
        /// The VAPID JWT's `sub`: `mailto:…` or `https:…`.
        package var subject: String
        /// The rest of the section, each key's default when not given.
        package var reach: WebPushReach
    }

    /// An app's FCM section (wire-format section 9.3).
    package struct FCM: Sendable {
        /// The service account's JSON key file, as Google issues it.
        package var serviceAccountFile: String
        /// `https://HOST[:PORT]`; FCM's server when not given.
        package var serverURL: String
        package var caFile: String?
        /// HTTP/2 connections to the server (1 when not given).
        package var connections: Int
    }

    /// The largest configuration file read.
    package static let maximumFileSize = 1 << 20

    package var path: String
    package var defaultApp: String?
    package var apps: [App]

    /// The app a line names, or its `default_app` (the only app when there is one and no
    /// default is named); `nil` when there is none such.
    package func app(named name: String?) -> App? {
        guard let name = name ?? defaultApp ?? (apps.count == 1 ? apps[0].name : nil) else { return nil }
        return apps.first { $0.name == name }
    }

    /// Reads and checks the file at `path`: every error is a usage error naming the file, the
    /// place and the key.
    package static func load(_ path: String) throws(CodedError) -> SendConfiguration {
        let text: [UInt8]
        do throws(Errno) {
            let descriptor = try FileDescriptor.openForReading(path)
            defer { descriptor.close() }
            text = try descriptor.readAll(upTo: maximumFileSize + 1, expectedSize: descriptor.regularFileSize ?? 0)
        } catch {
            throw CodedError(.usage, "--config \(path): \(error)")
        }
        guard text.count <= maximumFileSize else { throw CodedError(.usage, "--config \(path): larger than \(maximumFileSize >> 20) MiB") }
        let root: YAMLNode
        do throws(YAMLError) {
            root = try YAMLDocument.parse(text)
        } catch {
            throw CodedError(.usage, "--config \(path):\(error)")
        }
        var reader = Reader(path: path)
        return try reader.configuration(root)
    }

    /// The checks of one file, each failure naming its place and key path.
    private struct Reader {
        let path: String

        func fail(_ node: YAMLNode, _ key: String, _ message: String) -> CodedError {
            CodedError(.usage, "--config \(path):\(node.place): \(key): \(message)")
        }

        /// A mapping whose keys are all among `known`.
        func mapping(_ node: YAMLNode, _ key: String, known: [String]) throws(CodedError) -> [(key: String, value: YAMLNode)] {
            guard let members = node.mapping else { throw fail(node, key, "is \(node.kind), not a mapping") }
            for member in members where !known.contains(member.key) {
                let name = Printable.escaped(member.key)
                throw fail(member.value, key.isEmpty ? name : "\(key).\(name)", "unknown key (known: \(known.joined(separator: ", ")))")
            }
            return members
        }

        func text(_ node: YAMLNode, _ key: String) throws(CodedError) -> String {
            guard let text = node.scalar, !text.isEmpty else { throw fail(node, key, "takes text") }
            return text
        }

        mutating func configuration(_ root: YAMLNode) throws(CodedError) -> SendConfiguration {
            let members = try mapping(root, "", known: ["default_app", "apps"])
            guard let appsNode = members.first(where: { $0.key == "apps" })?.value else {
                throw CodedError(.usage, "--config \(path): no 'apps' (each app's name and its apns and webpush sections)")
            }
            let appMembers = try mapping(appsNode, "apps", known: appsNode.mapping?.map(\.key) ?? [])
            guard !appMembers.isEmpty else { throw fail(appsNode, "apps", "names no app") }
            var apps: [App] = []
            for (name, node) in appMembers {
                let key = "apps.\(Printable.escaped(name))"
                guard DeliveryFields.isAppName(name) else {
                    throw fail(node, key, "an app's name is 1 to \(DeliveryFields.maximumAppNameSize) letters, digits, '.', '_' or '-'")
                }
                apps.append(try app(name, node, key))
            }
            var defaultApp: String?
            if let node = members.first(where: { $0.key == "default_app" })?.value {
                let name = try text(node, "default_app")
                guard apps.contains(where: { $0.name == name }) else {
                    throw fail(node, "default_app", "'\(Printable.escaped(name))' is not one of the apps")
                }
                defaultApp = name
            }
            return SendConfiguration(path: path, defaultApp: defaultApp, apps: apps)
        }

        func app(_ name: String, _ node: YAMLNode, _ key: String) throws(CodedError) -> App {
            let members = try mapping(node, key, known: ["apns", "fcm", "webpush"])
            guard !members.isEmpty else { throw fail(node, key, "has no platform section (apns, fcm, webpush)") }
            var app = App(name: name, apns: nil, webPush: nil, fcm: nil, place: node.place)
            for (platform, section) in members {
                switch platform {
                case "apns": app.apns = try apns(section, "\(key).apns")
                case "webpush": app.webPush = try webPush(section, "\(key).webpush")
                default: app.fcm = try fcm(section, "\(key).fcm")
                }
            }
            return app
        }

        /// `url`: `https://HOST[:PORT]`, or `fallback` when not given.
        func serverURL(_ node: YAMLNode?, _ key: String, fallback: String) throws(CodedError) -> String {
            guard let node else { return fallback }
            guard let url = SendCommand.serverURL(try text(node, "\(key).url")) else {
                throw fail(node, "\(key).url", "takes https://HOST[:PORT]: no user or password, path, query or fragment")
            }
            return url
        }

        func fcm(_ node: YAMLNode, _ key: String) throws(CodedError) -> FCM {
            let members = try mapping(node, key, known: ["service_account_file", "url", "ca_file", "connections"])
            func member(_ name: String) -> YAMLNode? { members.first { $0.key == name }?.value }
            guard let fileNode = member("service_account_file") else { throw fail(node, key, "'service_account_file' is missing") }
            let caFile = try member("ca_file").map { (value) throws(CodedError) in try text(value, "\(key).ca_file") }
            return FCM(
                serviceAccountFile: try text(fileNode, "\(key).service_account_file"),
                serverURL: try serverURL(member("url"), key, fallback: FCMDestination.productionURL), caFile: caFile,
                connections: try connections(member("connections"), key))
        }

        /// `connections`: 1 to ``SendOptions/mostConnections``, 1 when not given.
        func connections(_ node: YAMLNode?, _ key: String) throws(CodedError) -> Int {
            guard let node else { return 1 }
            guard let count = node.integer, (1...SendOptions.mostConnections).contains(count) else {
                throw fail(node, "\(key).connections", "takes a whole number from 1 to \(SendOptions.mostConnections)")
            }
            return count
        }

        func webPush(_ node: YAMLNode, _ key: String) throws(CodedError) -> WebPush {
            let members = try mapping(
                node, key,
                known: [
                    "vapid_key_file", "subject", "ca_file", "connections", "allowed_origins", "max_push_services",
                    "allow_private_addresses",
                ])
            func member(_ name: String) -> YAMLNode? { members.first { $0.key == name }?.value }
            func required(_ name: String) throws(CodedError) -> (YAMLNode, String) {
                guard let value = member(name) else { throw fail(node, key, "'\(name)' is missing") }
                return (value, try text(value, "\(key).\(name)"))
            }
            let keyFile = try required("vapid_key_file").1
            let (subjectNode, subject) = try required("subject")
            let isSubject =
                (subject.hasPrefix("mailto:") || subject.hasPrefix("https://")) && subject.utf8.count > 8
                && subject.utf8.count <= 256 && subject.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") }
            guard isSubject else {
                throw fail(subjectNode, "\(key).subject", "takes a mailto: or https: URL (RFC 8292's contact for the push services)")
            }
            let caFile = try member("ca_file").map { (value) throws(CodedError) in try text(value, "\(key).ca_file") }
            var allowedOrigins: WebPushOrigins?
            if let list = member("allowed_origins") {
                let origins = "takes a list of origins, each https://HOST[:PORT] or https://*.DOMAIN[:PORT]"
                guard case .sequence(let items) = list.value, !items.isEmpty else { throw fail(list, "\(key).allowed_origins", origins) }
                var patterns: [String] = []
                for item in items {
                    // Each one checked alone, so that a refusal names its place.
                    guard let text = item.scalar, WebPushOrigins([text]) != nil else { throw fail(item, "\(key).allowed_origins", origins) }
                    patterns.append(text)
                }
                allowedOrigins = WebPushOrigins(patterns)
            }
            var maximumPushServices = WebPushOrigins.defaultMaximum
            if let node = member("max_push_services") {
                guard let count = node.integer, (1...WebPushOrigins.mostPushServices).contains(count) else {
                    throw fail(node, "\(key).max_push_services", "takes a whole number from 1 to \(WebPushOrigins.mostPushServices)")
                }
                maximumPushServices = count
            }
            var allowsPrivateAddresses = false
            if let node = member("allow_private_addresses") {
                guard case .scalar(let word, true) = node.value, word == "true" || word == "false" else {
                    throw fail(node, "\(key).allow_private_addresses", "takes true or false")
                }
                allowsPrivateAddresses = word == "true"
            }
            let reach = WebPushReach(
                caFile: caFile, connections: try connections(member("connections"), key), allowedOrigins: allowedOrigins,
                maximumPushServices: maximumPushServices, allowsPrivateAddresses: allowsPrivateAddresses)
            return WebPush(vapidKeyFile: keyFile, subject: subject, reach: reach)
        }

        func apns(_ node: YAMLNode, _ key: String) throws(CodedError) -> APNs {
            let known = ["team_id", "key_id", "key_file", "topic", "url", "ca_file", "connections"]
            let members = try mapping(node, key, known: known)
            func member(_ name: String) -> YAMLNode? { members.first { $0.key == name }?.value }
            func required(_ name: String) throws(CodedError) -> (YAMLNode, String) {
                guard let value = member(name) else { throw fail(node, key, "'\(name)' is missing") }
                return (value, try text(value, "\(key).\(name)"))
            }
            func identifier(_ name: String) throws(CodedError) -> String {
                let (value, text) = try required(name)
                guard SendCommand.isAppleID(text) else {
                    throw fail(value, "\(key).\(name)", "takes Apple's 10-character ID (capital letters and digits)")
                }
                return text
            }
            let teamID = try identifier("team_id")
            let keyID = try identifier("key_id")
            let keyFile = try required("key_file").1
            let (topicNode, topic) = try required("topic")
            guard SendCommand.isTopic(topic) else { throw fail(topicNode, "\(key).topic", "takes a bundle ID") }
            let serverURL = try serverURL(member("url"), key, fallback: SendCommand.productionURL)
            let caFile = try member("ca_file").map { (value) throws(CodedError) in try text(value, "\(key).ca_file") }
            return APNs(
                teamID: teamID, keyID: keyID, keyFile: keyFile, topic: topic, serverURL: serverURL, caFile: caFile,
                connections: try connections(member("connections"), key))
        }
    }
}
