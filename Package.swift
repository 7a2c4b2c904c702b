// swift-tools-version: 6.0
// KindlyPush: detect, decrypt and route end-to-end-encrypted Kindly push notifications on Linux.
//
// Layers, as swift-crypto builds them: C libraries -> thin C shims -> `KindlyPushCore` (the
// primitives, `package` access only) -> `KindlyPush` (the small public API). The Secret Service
// keyring and the desktop banners are products of their own, the only ones that link libsecret
// or GLib, so that a service that keeps its keys in files builds without them.
import PackageDescription

/// Where the C shims find GLib's and libsecret's headers: links in Sources/SystemHeaders/ to the
/// folders pkg-config names (`pkg-config --cflags-only-I libsecret-1`), glibconfig.h's for each
/// common layout (Debian's multiarch folders, /usr/lib64, /usr/lib). A `headerSearchPath` is not
/// an unsafe flag, so a package that depends on this one by version can build the shims.
///
/// Why not `.systemLibrary(pkgConfig:)`: SwiftPM (6.3) prints glib's "prohibited flag(s):
/// -pthread" twice in the build of every package that depends on this one, even one that links
/// only `KindlyPush`. Only the C shims see these headers; the Swift targets import headers that
/// need no include flag (CGLib.h declares the part of GLib that Swift calls).
let glibHeaders: [CSetting] = [
    "glib-2.0", "libsecret-1", "glibconfig-x86_64-linux-gnu", "glibconfig-aarch64-linux-gnu", "glibconfig-lib64",
    "glibconfig-lib",
].map { .headerSearchPath("../SystemHeaders/\($0)") }

/// Upcoming features that keep a public surface honest: every existential is spelled `any`, and
/// an import is internal unless it says otherwise, so that no dependency leaks into a client.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

// The test targets. `KINDLY_PUSH_TEST_TARGETS` (set by tools/test in its full run, nowhere else)
// declares some of them only: `in-process` the library's, the Secret Service's and the desktop's
// (they call the library and the C shims in the test process: the AddressSanitizer build, where
// they run sanitized), `command` the command's (they run the `kindly-push` binaries: the debug
// build, beside the sanitized helpers). Unset, every test target is declared, as a clone's
// `swift test` builds them all. docs/development.md says why the full run splits them.
let testTargetsWanted = Context.environment["KINDLY_PUSH_TEST_TARGETS"]
let allTestTargets: [Target] = [
    // One test target per product: KindlyPush's tests build without libsecret's headers.
    .testTarget(
        name: "KindlyPushTests",
        dependencies: [
            "KindlyPush", "KindlyPushBase", "KindlyPushCore", "KindlyPushTesting", "KindlyPushVectors", "CVectorText",
            "KindlyPushLibcrypto",
            "KindlyPushWebPush",
        ]
    ),
    // The Secret Service keyring against a private gnome-keyring (tools/with-secret-service).
    // Keyring/ links two files of KindlyPushTests (shared helpers and the pinning contract), Bus/
    // the private D-Bus daemon of KindlyPushCLITests (TestBus).
    .testTarget(
        name: "KindlyPushSecretServiceTests",
        dependencies: ["KindlyPushSecretService", "KindlyPush", "KindlyPushCore", "KindlyPushTesting"]
    ),
    .testTarget(
        name: "KindlyPushDesktopTests",
        dependencies: ["KindlyPushDesktop", "KindlyPush", "KindlyPushCore", "KindlyPushTesting", "KindlyPushVectors"]
    ),
    .testTarget(
        name: "KindlyPushCLITests",
        // The documented-figures test reads the constants of every layer the command has.
        dependencies: [
            "KindlyPush", "KindlyPushBase", "KindlyPushCore", "KindlyPushCLI", "KindlyPushCLIDesktop", "KindlyPushDesktop",
            "KindlyPushSecretService", "KindlyPushRedis", "KindlyPushCLIRedis", "KindlyPushSend", "KindlyPushCLISend",
            "KindlyPushTesting", "KindlyPushVectors", "KindlyPushWebPush", "KindlyPushLibcrypto",
        ]
    ),
]
let testTargets = allTestTargets.filter { target in
    switch testTargetsWanted {
    case "in-process": target.name != "KindlyPushCLITests"
    case "command": target.name == "KindlyPushCLITests"
    default: true
    }
}

let package = Package(
    name: "KindlyPush",
    products: [
        // Detection, decryption, apply/isDecrypted, sealing, device keys and key files, the file
        // and in-memory keyrings, the display rules and router, the notification-side types.
        .library(name: "KindlyPush", targets: ["KindlyPush"]),
        // The Secret Service keyring (libsecret): link it only where keys live in a desktop keyring.
        .library(name: "KindlyPushSecretService", targets: ["KindlyPushSecretService"]),
        // Desktop banners (`kindly-push notify`): the freedesktop Notifications client over GDBus
        // and the SQLite de-duplication store. Only a host that shows banners links it (and so
        // GIO and SQLite); KindlyPush does not depend on it.
        .library(name: "KindlyPushDesktop", targets: ["KindlyPushDesktop"]),
        // Test doubles for code that links KindlyPush, shipped as swift-log ships its own.
        .library(name: "KindlyPushTesting", targets: ["KindlyPushTesting"]),
        .executable(name: "kindly-push", targets: ["kindly-push"]),
        .executable(name: "kindly-push-desktop", targets: ["kindly-push-desktop"]),
        // The Redis Streams workers (`--redis`); `kindly-push` runs it, so that only it links hiredis.
        .executable(name: "kindly-push-redis", targets: ["kindly-push-redis"]),
        // `send` (APNs over HTTP/2); `kindly-push` runs it, so that only it links nghttp2 and libcrypto.
        .executable(name: "kindly-push-send", targets: ["kindly-push-send"]),
    ],
    targets: [
        // System libraries: every cryptographic primitive comes from libsodium.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        // GLib, GObject and GIO (Debian libglib2.0-dev): the part Swift calls, declared in
        // CGLib.h (its module map links gio, gobject and glib), and the time budgets of both
        // shims below.
        .target(name: "CGLib", cSettings: glibHeaders),
        // What Swift cannot call in libsecret (Debian libsecret-1-dev; C-variadic constructors,
        // the schema as a static, one-time type registration, a never-prompting service class),
        // kept thin as swift-crypto keeps its C shims: C library -> shim -> Swift. Its module map
        // links libsecret.
        .target(name: "CSecretShim", dependencies: ["CGLib"], cSettings: glibHeaders),
        // SQLite (libsqlite3-dev), for the desktop de-duplication store; its header is on the
        // compiler's default path.
        .systemLibrary(name: "CSQLite"),
        // hiredis (Debian libhiredis-dev), for the Redis Streams workers; its header is on the
        // compiler's default path. Only KindlyPushRedis links it.
        .systemLibrary(name: "CHiredis", providers: [.apt(["libhiredis-dev"])]),
        // OpenSSL (Debian libssl-dev): TLS for `rediss://` (Debian's hiredis 0.14 has none, so the
        // workers run hiredis's protocol reader over an OpenSSL connection), and libcrypto for
        // what libsodium lacks (KindlyPushLibcrypto). Only KindlyPushRedis, KindlyPushLibcrypto
        // and KindlyPushSend link it.
        .systemLibrary(name: "COpenSSL", providers: [.apt(["libssl-dev"])]),
        // libmicrohttpd (Debian libmicrohttpd-dev), the HTTP server of what the workers serve
        // (`--metrics`), behind a C layer of its own: microhttpd.h includes the socket headers,
        // and a module that exported them would own their constants for every file of a
        // whole-module build. Only KindlyPushRedis links it.
        .target(name: "CHTTPServer", linkerSettings: [.linkedLibrary("microhttpd")]),
        // libyaml (Debian libyaml-dev), for `send --config`'s file; its header is on the
        // compiler's default path. Only KindlyPushCLISend links it.
        .systemLibrary(name: "CYAML", providers: [.apt(["libyaml-dev"])]),
        // nghttp2 (Debian libnghttp2-dev, the library of nghttp2's h2load and nghttpd): HTTP/2's
        // framing, HPACK and streams for `send`, over OpenSSL's TLS; its header is on the
        // compiler's default path. Only KindlyPushHTTP2 links it.
        .systemLibrary(name: "CNghttp2", providers: [.apt(["libnghttp2-dev"])]),
        // What Swift cannot call in GDBus (C-variadic GVariant constructors, a message filter
        // that runs on GDBus's worker thread), for the desktop notification client; only
        // KindlyPushDesktop links it.
        .target(name: "CDesktopShim", dependencies: ["CGLib"], cSettings: glibHeaders),
        // What the command does before it reads a key: standard streams held, the process made
        // non-dumpable, crash handlers that print one fixed line and dump nothing (prctl is
        // C-variadic, and a signal handler must be plain async-signal-safe C).
        // kp_on_main_queue calls libdispatch's C API (the Swift runtime loads the library anyway).
        .target(name: "CProcessGuard", linkerSettings: [.linkedLibrary("dispatch")]),
        // The loops over text that run sixteen bytes at a time (SSE2, and SSSE3 when the CPU has
        // it; thirty-two with AVX2): JSON string scans and base64 decoding, which Swift's SIMD
        // types do not compile to yet.
        .target(name: "CVectorText"),
        // Primitives on libsodium, canonical base64, secure buffers, line batching and locks.
        // Its API is `package`: nothing here is visible to a client of the products.
        .target(
            name: "KindlyPushCore",
            dependencies: ["CSodium", "CVectorText"],
            swiftSettings: strictSettings
        ),
        // The types and logic of the public API, with no Foundation: the command links this
        // alone, so that a one-shot run loads neither Foundation nor ICU.
        .target(
            name: "KindlyPushBase",
            // CProcessGuard: the temporary files of writes, removed on SIGTERM, SIGINT, SIGHUP.
            dependencies: ["KindlyPushCore", "CProcessGuard", "CVectorText"],
            swiftSettings: strictSettings
        ),
        // The public library: KindlyPushBase re-exported, and what needs Foundation (`Data` and
        // dictionary forms, `LocalizedError`, the notification service extension).
        .target(
            name: "KindlyPush",
            dependencies: ["KindlyPushBase", "KindlyPushCore"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "KindlyPushSecretService",
            dependencies: ["KindlyPush", "KindlyPushCore", "CGLib", "CSecretShim"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "KindlyPushDesktop",
            dependencies: ["KindlyPush", "KindlyPushCore", "CGLib", "CSQLite", "CDesktopShim"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "KindlyPushTesting",
            dependencies: ["KindlyPush", "KindlyPushCore"],
            swiftSettings: strictSettings
        ),
        // The test-vector runner of docs/spec/streams.md ("Test-vector files"), for `kindly-push verify` and the
        // suite; not a product.
        .target(
            name: "KindlyPushVectors",
            dependencies: ["KindlyPushBase", "KindlyPushCore"],
            swiftSettings: strictSettings
        ),
        // The command line: every command, parsed from one declaration per option. It links
        // neither Foundation nor libsecret, GIO or SQLite; what needs those is in
        // KindlyPushCLIDesktop.
        .target(
            name: "KindlyPushCLI",
            // CProcessGuard: the process guards every binary's main sets first (kindlyPushMain).
            dependencies: ["KindlyPushBase", "KindlyPushCore", "KindlyPushVectors", "CProcessGuard"],
            swiftSettings: strictSettings,
            // Each command's and option group's `options` list, read off its declarations.
            plugins: ["OptionLists"]
        ),
        // The lists of options, written at build time from the declarations of the command line
        // (each option declared once: its key is the list).
        .executableTarget(name: "OptionListGenerator", swiftSettings: strictSettings),
        .plugin(name: "OptionLists", capability: .buildTool(), dependencies: ["OptionListGenerator"]),
        // The Secret Service keyring, `notify` and `doctor` for the command line.
        .target(
            name: "KindlyPushCLIDesktop",
            dependencies: [
                "KindlyPushCLI", "KindlyPush", "KindlyPushCore", "KindlyPushSecretService", "KindlyPushDesktop", "KindlyPushWebPush",
                "KindlyPushLibcrypto",
            ],
            swiftSettings: strictSettings,
            plugins: ["OptionLists"]
        ),
        // The Redis Streams worker: the library's line engine over the entries of a consumer
        // group (hiredis); it knows no command line. `redis-status`'s reading too.
        .target(
            name: "KindlyPushRedis",
            dependencies: ["KindlyPushBase", "KindlyPushCore", "CHiredis", "COpenSSL", "CHTTPServer"],
            swiftSettings: strictSettings
        ),
        // `--redis` and `redis-status` for the command line: the document commands run by
        // KindlyPushRedis's worker, as KindlyPushCLIDesktop is the desktop's glue.
        .target(
            name: "KindlyPushCLIRedis",
            dependencies: ["KindlyPushCLI", "KindlyPushBase", "KindlyPushCore", "KindlyPushRedis"],
            swiftSettings: strictSettings,
            plugins: ["OptionLists"]
        ),
        // The primitives libsodium lacks, from OpenSSL's libcrypto, as swift-crypto layers its
        // own (C library -> Swift primitives): P-256 keys, ECDH and ES256 (JWTs), AES-128-GCM.
        // Every other primitive, HKDF-SHA256 included, stays libsodium's (KindlyPushCore).
        .target(
            name: "KindlyPushLibcrypto",
            dependencies: ["KindlyPushBase", "KindlyPushCore", "COpenSSL"],
            swiftSettings: strictSettings
        ),
        // Web Push's message encryption (RFC 8291, `aes128gcm`) both ways, and VAPID (RFC 8292).
        .target(
            name: "KindlyPushWebPush",
            dependencies: ["KindlyPushBase", "KindlyPushCore", "KindlyPushLibcrypto"],
            swiftSettings: strictSettings
        ),
        // An HTTP/2 client over TLS for the push services: a pool of connections to one server
        // (nghttp2's memory interface, OpenSSL, one poll over every socket), which knows no push
        // service; `send`'s APNs sender is its first user.
        .target(
            name: "KindlyPushHTTP2",
            dependencies: ["KindlyPushCore", "CNghttp2", "COpenSSL"],
            swiftSettings: strictSettings
        ),
        // `send`: the gateway that pushes to APNs (the ES256 provider token), FCM (OAuth 2.0 with
        // the service account) and Web Push (RFC 8291, VAPID) over pools of HTTP/2 connections.
        .target(
            name: "KindlyPushSend",
            dependencies: ["KindlyPushBase", "KindlyPushCore", "KindlyPushHTTP2", "KindlyPushLibcrypto", "KindlyPushWebPush", "COpenSSL"],
            swiftSettings: strictSettings
        ),
        // The command's glue for `send`: its command table entry, standard input and files to
        // the sender, and `send --redis` on the library's worker.
        .target(
            name: "KindlyPushCLISend",
            // CYAML: `send --config`'s file.
            dependencies: [
                "KindlyPushCLI", "KindlyPushSend", "KindlyPushBase", "KindlyPushCore", "KindlyPushLibcrypto", "KindlyPushRedis",
                "KindlyPushWebPush", "CYAML",
            ],
            swiftSettings: strictSettings,
            plugins: ["OptionLists"]
        ),
        // A crash handler that dumps nothing, non-dumpable process, standard streams held open.
        .executableTarget(
            name: "kindly-push",
            dependencies: ["KindlyPushCLI"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "kindly-push-desktop",
            dependencies: ["KindlyPushCLI", "KindlyPushCLIDesktop"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "kindly-push-redis",
            dependencies: ["KindlyPushCLI", "KindlyPushCLIDesktop", "KindlyPushCLIRedis"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "kindly-push-send",
            // KindlyPushCLIRedis: `send --redis`, a send worker of a consumer group.
            dependencies: ["KindlyPushCLI", "KindlyPushCLISend", "KindlyPushCLIRedis"],
            swiftSettings: strictSettings
        ),
        // The in-process latency loop of tools/bench; not a product, not installed.
        .executableTarget(
            name: "kindly-push-bench",
            dependencies: ["KindlyPush", "KindlyPushCore", "KindlyPushLibcrypto", "KindlyPushWebPush"],
            swiftSettings: strictSettings
        ),
    ] + testTargets,
    swiftLanguageModes: [.v6]
)
