// swift-tools-version: 6.0
// A service that links KindlyPush as a dependency, the way another team would: by URL and
// version, using only the public products, never the Secret Service product, and testing itself
// with KindlyPushTesting. tools/examples builds it with libsecret's and glib's headers hidden and
// runs its tests, so the public API is exercised from outside.
//
// The URL is a bare clone that tools/examples makes of the current commit and tags with the
// release's version (`.build/examples/kindlypush.git` at the repository's root); a user's
// package names the repository's own URL instead (README.md, "Install").
import PackageDescription

let root = Context.packageDirectory.split(separator: "/").dropLast().joined(separator: "/")

let package = Package(
    name: "KindlyPushExamples",
    dependencies: [
        .package(url: "file:///\(root)/.build/examples/kindlypush.git", from: "0.3.0")
    ],
    targets: [
        // A push gateway: decrypts pushes with a key-file keyring, routes them, seals replies.
        .target(
            name: "PushGateway",
            dependencies: [.product(name: "KindlyPush", package: "kindlypush")]
        ),
        .executableTarget(
            name: "push-gateway",
            dependencies: ["PushGateway", .product(name: "KindlyPush", package: "kindlypush")]
        ),
        .testTarget(
            name: "PushGatewayTests",
            dependencies: [
                "PushGateway",
                .product(name: "KindlyPush", package: "kindlypush"),
                .product(name: "KindlyPushTesting", package: "kindlypush"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
