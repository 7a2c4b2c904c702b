// swift-tools-version: 6.0
// KindlyPush: detect, decrypt and route end-to-end-encrypted Kindly push notifications on Linux.
import PackageDescription

let package = Package(
    name: "KindlyPush",
    products: [
        .library(name: "KindlyPush", targets: ["KindlyPush"]),
        // A test double (the in-memory keyring) for code that links the library, shipped like swift-log's.
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
        .target(
            name: "KindlyPush",
            dependencies: ["CSodium", "CLibsecret", "CSecretShim"]
        ),
        .target(
            name: "KindlyPushTesting",
            dependencies: ["KindlyPush"]
        ),
        .executableTarget(
            name: "kindly-push",
            dependencies: ["KindlyPush"]
        ),
        // The in-process latency loop of tools/bench; not a product, not installed.
        .executableTarget(
            name: "kindly-push-bench",
            dependencies: ["KindlyPush"]
        ),
        .testTarget(
            name: "KindlyPushTests",
            dependencies: ["KindlyPush", "KindlyPushTesting"]
        ),
        .testTarget(
            name: "KindlyPushCLITests",
            dependencies: ["KindlyPush"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
