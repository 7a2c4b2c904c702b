// swift-tools-version: 6.0
// KindlyPush: detect, decrypt and route end-to-end-encrypted Kindly push notifications on Linux.
//
// Layers, as swift-crypto builds them: C libraries -> thin C shims -> `KindlyPushCore` (the
// primitives, `package` access only) -> `KindlyPush` (the small public API). The Secret Service
// keyring is its own product, the only one that links libsecret and glib, so that a service that
// keeps its keys in files builds without them.
import Foundation
import PackageDescription

/// The `-I` flags of a pkg-config package (`pkg-config --cflags-only-I`), read when the manifest
/// is evaluated; empty when pkg-config or the package is missing (the targets that need them
/// then fail to compile, with the apt package named in the error).
///
/// Why not `.systemLibrary(pkgConfig:)`: SwiftPM asks pkg-config about every such target in the
/// graph, used or not, and prints glib's "prohibited flag(s): -pthread" in the build of every
/// package that depends on this one, even one that links only `KindlyPush`. Reading the include
/// paths here keeps libsecret and glib the Secret Service product's business alone.
func pkgConfigIncludeFlags(_ name: String) -> [String] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["pkg-config", "--cflags-only-I", name]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return [] }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return [] }
    return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).map(String.init)
}

let libsecretIncludes = pkgConfigIncludeFlags("libsecret-1")
let gioIncludes = pkgConfigIncludeFlags("gio-2.0")

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
        // Desktop banners (`kindly-push notify`): the freedesktop Notifications client over GDBus
        // and the SQLite de-duplication store. Only a host that shows banners links it (and so
        // GIO and SQLite); KindlyPush does not depend on it.
        .library(name: "KindlyPushDesktop", targets: ["KindlyPushDesktop"]),
        // Test doubles for code that links KindlyPush, shipped as swift-log ships its own.
        .library(name: "KindlyPushTesting", targets: ["KindlyPushTesting"]),
        .executable(name: "kindly-push", targets: ["kindly-push"]),
        .executable(name: "kindly-push-desktop", targets: ["kindly-push-desktop"]),
    ],
    targets: [
        // System libraries: every cryptographic primitive comes from libsodium.
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        // libsecret (Debian: libsecret-1-dev). Its module map links libsecret, gio, gobject and
        // glib; the include paths come from `libsecretIncludes`.
        .systemLibrary(name: "CLibsecret"),
        // What Swift cannot call in libsecret (C-variadic constructors, the schema as a static,
        // one-time type registration, a never-prompting service class), kept thin as
        // swift-crypto keeps its C shims: C library -> shim -> Swift.
        .target(
            name: "CSecretShim",
            dependencies: ["CLibsecret"],
            cSettings: [.unsafeFlags(libsecretIncludes)]
        ),
        // GIO's GDBus (Debian libglib2.0-dev), for the desktop notification client, and SQLite
        // (libsqlite3-dev), for its de-duplication store; only KindlyPushDesktop links them. Their
        // module maps name the libraries; GIO's include paths come from `gioIncludes` (no
        // `pkgConfig:`, for the reason given at `pkgConfigIncludeFlags`), SQLite's header is on
        // the compiler's default path.
        .systemLibrary(name: "CGio"),
        .systemLibrary(name: "CSQLite"),
        // What Swift cannot call in GDBus (C-variadic GVariant constructors, a message filter
        // that runs on GDBus's worker thread, time budgets on a timer thread of their own).
        .target(
            name: "CDesktopShim",
            dependencies: ["CGio"],
            cSettings: [.unsafeFlags(gioIncludes)]
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
        // The types and logic of the public API, with no Foundation: the command links this
        // alone, so that a one-shot run loads neither Foundation nor ICU.
        .target(
            name: "KindlyPushBase",
            // CProcessGuard: the temporary files of writes, removed on SIGTERM, SIGINT, SIGHUP.
            dependencies: ["KindlyPushCore", "CProcessGuard"],
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
            dependencies: ["KindlyPush", "KindlyPushCore", "CLibsecret", "CSecretShim"],
            swiftSettings: strictSettings + [.unsafeFlags(libsecretIncludes.flatMap { ["-Xcc", $0] })]
        ),
        .target(
            name: "KindlyPushDesktop",
            dependencies: ["KindlyPush", "KindlyPushCore", "CGio", "CSQLite", "CDesktopShim"],
            swiftSettings: strictSettings + [.unsafeFlags(gioIncludes.flatMap { ["-Xcc", $0] })]
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
            dependencies: ["KindlyPushBase", "KindlyPushCore"],
            swiftSettings: strictSettings
        ),
        // The command line: every command, parsed from one declaration per option. It links
        // neither Foundation nor libsecret, GIO or SQLite; what needs those is in
        // KindlyPushCLIDesktop.
        .target(
            name: "KindlyPushCLI",
            dependencies: ["KindlyPushBase", "KindlyPushCore", "KindlyPushVectors"],
            swiftSettings: strictSettings
        ),
        // The Secret Service keyring, `notify` and `doctor` for the command line.
        .target(
            name: "KindlyPushCLIDesktop",
            dependencies: ["KindlyPushCLI", "KindlyPush", "KindlyPushCore", "KindlyPushSecretService", "KindlyPushDesktop"],
            swiftSettings: strictSettings
        ),
        // A crash handler that dumps nothing, non-dumpable process, standard streams held open.
        .executableTarget(
            name: "kindly-push",
            dependencies: ["KindlyPushCLI", "CProcessGuard"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "kindly-push-desktop",
            dependencies: ["KindlyPushCLI", "KindlyPushCLIDesktop", "CProcessGuard"],
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
            dependencies: [
                "KindlyPush", "KindlyPushBase", "KindlyPushCore", "KindlyPushSecretService", "KindlyPushTesting", "KindlyPushVectors",
            ]
        ),
        .testTarget(
            name: "KindlyPushDesktopTests",
            dependencies: ["KindlyPushDesktop", "KindlyPush", "KindlyPushCore"]
        ),
        .testTarget(
            name: "KindlyPushCLITests",
            dependencies: ["KindlyPush", "KindlyPushCore", "KindlyPushCLI"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
