// swift-tools-version: 6.0
// A service that links KindlyPush as a dependency, the way another team would: it uses only the
// public products, never the Secret Service product, and tests itself with KindlyPushTesting.
// tools/test builds it and runs its tests on every run, so the public API is exercised from
// outside.
import PackageDescription

let package = Package(
    name: "KindlyPushExamples",
    dependencies: [
        .package(name: "KindlyPush", path: "..")
    ],
    targets: [
        // A push gateway: decrypts pushes with a key-file keyring, routes them, seals replies.
        .target(
            name: "PushGateway",
            dependencies: [.product(name: "KindlyPush", package: "KindlyPush")]
        ),
        .executableTarget(
            name: "push-gateway",
            dependencies: ["PushGateway", .product(name: "KindlyPush", package: "KindlyPush")]
        ),
        .testTarget(
            name: "PushGatewayTests",
            dependencies: [
                "PushGateway",
                .product(name: "KindlyPush", package: "KindlyPush"),
                .product(name: "KindlyPushTesting", package: "KindlyPush"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
