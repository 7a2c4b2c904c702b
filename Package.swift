// swift-tools-version: 6.0
// KindlyPush: detect, decrypt and route end-to-end-encrypted Kindly push notifications on Linux.
//
// Layers, as swift-crypto builds them: C libraries -> thin C shims -> `KindlyPushCore` (the
// primitives, `package` access only) -> `KindlyPush` (the small public API). The Secret Service
// keyring is its own product, the only one that links libsecret and glib, so that a service that
// keeps its keys in files builds without them.
import PackageDescription

/// Upcoming features that keep a public surface honest: every existential is spelled `any`, and
/// an import is internal unless it says otherwise, so that no dependency leaks into a client.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "KindlyPush",
    products: [
        // Detection, decryption, apply/isDecrypted, sealing, device keys and key files, the file
        // and in-memory keyrings, the display rules and router, the notification-side types.
        .library(name: "KindlyPush", targets: ["KindlyPush"]),
        // The Secret Service keyring (libsecret): link it only where keys live in a desktop keyring.
        .library(name: "KindlyPushSecretService", targets: ["KindlyPushSecretService"]),
        // Test doubles for code that links KindlyPush, shipped as swift-log ships its own.
        .library(name: "KindlyPushTesting", targets: ["KindlyPushTesting"]),
        .executable(name: "kindly-push", targets: ["kindly-push"]),
    ],
    targets: [
        // System libraries: every cryptographic primitive comes from libsodium.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        .systemLibrary(
            name: "CLibsecret",
            pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev"])]
        ),
        // What Swift cannot call in libsecret (C-variadic constructors, the schema as a static,
        // one-time type registration, a never-prompting service class), kept thin as
        // swift-crypto keeps its C shims: C library -> shim -> Swift.
        .target(
            name: "CSecretShim",
            dependencies: ["CLibsecret"]
        ),
        // What the command does before it reads a key: standard streams held, the process made
        // non-dumpable, crash handlers that print one fixed line and dump nothing (prctl is
        // C-variadic, and a signal handler must be plain async-signal-safe C).
        .target(name: "CProcessGuard"),
        // Primitives on libsodium, canonical base64, secure buffers, line batching and locks.
        // Its API is `package`: nothing here is visible to a client of the products.
        .target(
            name: "KindlyPushCore",
            dependencies: ["CSodium"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "KindlyPush",
            dependencies: ["KindlyPushCore"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "KindlyPushSecretService",
            dependencies: ["KindlyPush", "KindlyPushCore", "CLibsecret", "CSecretShim"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "KindlyPushTesting",
            dependencies: ["KindlyPush", "KindlyPushCore"],
            swiftSettings: strictSettings
        ),
        // The test-vector runner of cli.md ("Test-vector files"), for `kindly-push verify` and the
        // suite; not a product.
        .target(
            name: "KindlyPushVectors",
            dependencies: ["KindlyPush", "KindlyPushCore"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "kindly-push",
            dependencies: ["KindlyPush", "KindlyPushCore", "KindlyPushSecretService", "KindlyPushVectors", "CProcessGuard"],
            swiftSettings: strictSettings
        ),
        // The in-process latency loop of tools/bench; not a product, not installed.
        .executableTarget(
            name: "kindly-push-bench",
            dependencies: ["KindlyPush", "KindlyPushCore"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "KindlyPushTests",
            dependencies: ["KindlyPush", "KindlyPushCore", "KindlyPushSecretService", "KindlyPushTesting", "KindlyPushVectors"]
        ),
        .testTarget(
            name: "KindlyPushCLITests",
            dependencies: ["KindlyPush", "KindlyPushCore"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
