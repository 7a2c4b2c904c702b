// swift-tools-version: 6.0
// libFuzzer targets for KindlyPush. A package of its own, so that the root package's
// `swift build` never sees them: build and run them with `tools/fuzz` (see README.md, "Fuzzing").
import PackageDescription

let fuzzTargets = ["fuzz-json", "fuzz-decrypt", "fuzz-base64", "fuzz-keyfile", "fuzz-jsonl"]

/// The root package's settings for its own targets (Package.swift, `strictSettings`): their
/// sources are written for them (an import is internal unless it says otherwise).
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "KindlyPushFuzz",
    targets: [
        // The library's own targets, by symbolic link into ../Sources: built here as part of this
        // package, so that the fuzzers reach its `package` API (the primitives, the parsers) that
        // no client of the products can see.
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .target(name: "CVectorText"),
        .target(name: "KindlyPushCore", dependencies: ["CSodium", "CVectorText"], swiftSettings: strictSettings),
        .target(name: "CProcessGuard", linkerSettings: [.linkedLibrary("dispatch")]),
        .target(name: "KindlyPushBase", dependencies: ["KindlyPushCore", "CProcessGuard", "CVectorText"], swiftSettings: strictSettings),
        .target(name: "KindlyPush", dependencies: ["KindlyPushBase", "KindlyPushCore"], swiftSettings: strictSettings),
        .target(name: "KindlyPushTesting", dependencies: ["KindlyPush", "KindlyPushCore"], swiftSettings: strictSettings),
        // The libFuzzer entry point (LLVMFuzzerRunDriver), a memfd helper, and libsodium for the
        // independent reference checks.
        .systemLibrary(name: "CFuzzSupport"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzSupport"]),
    ]
        + fuzzTargets.map { name in
            .executableTarget(
                name: name,
                dependencies: [
                    "FuzzSupport",
                    "KindlyPushCore",
                    "KindlyPush",
                    "KindlyPushTesting",
                ]
            )
        },
    swiftLanguageModes: [.v6]
)
