// swift-tools-version: 6.0
// A package that depends on every library product of KindlyPush by version, as a user's would:
// tools/examples builds it (libsecret's and glib's headers visible) and fails on any warning.
// The URL is a bare clone that tools/examples makes of the current commit and tags with the
// release's version (`.build/examples/kindlypush.git` at the repository's root); a user's
// package names the repository's own URL instead (README.md, "Install").
import PackageDescription

let root = Context.packageDirectory.split(separator: "/").dropLast(2).joined(separator: "/")

let package = Package(
    name: "AllProducts",
    dependencies: [
        .package(url: "file:///\(root)/.build/examples/kindlypush.git", from: "0.3.0")
    ],
    targets: [
        .executableTarget(
            name: "all-products",
            dependencies: [
                .product(name: "KindlyPush", package: "kindlypush"),
                .product(name: "KindlyPushSecretService", package: "kindlypush"),
                .product(name: "KindlyPushDesktop", package: "kindlypush"),
                .product(name: "KindlyPushTesting", package: "kindlypush"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
