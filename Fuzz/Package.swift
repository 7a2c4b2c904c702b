// swift-tools-version: 6.0
// libFuzzer targets for KindlyPush (issue 6). A package of its own, so that the root package's
// `swift build` never sees them: build and run them with `tools/fuzz` (see README.md, "Fuzzing").
import PackageDescription

let fuzzTargets = ["fuzz-json", "fuzz-decrypt", "fuzz-base64", "fuzz-keyfile", "fuzz-jsonl"]

let package = Package(
    name: "KindlyPushFuzz",
    dependencies: [
        .package(name: "KindlyPush", path: "..")
    ],
    targets: [
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
                    .product(name: "KindlyPush", package: "KindlyPush"),
                    .product(name: "KindlyPushTesting", package: "KindlyPush"),
                ]
            )
        },
    swiftLanguageModes: [.v6]
)
