// swift-tools-version: 6.0
import Foundation
import PackageDescription

// libFuzzer targets, built with `-sanitize=fuzzer` (see README.md here); the library is the folder
// above, named after its folder whatever a clone is called.
let libraryFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let avenues = Target.Dependency.product(name: "Avenues", package: libraryFolder.lastPathComponent)

let package = Package(
    name: "Fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(name: "DiskEntryFuzzer", dependencies: [avenues]),
        // Uses internal parsers: built with -enable-testing (README.md here).
        .executableTarget(name: "ResponseFuzzer", dependencies: [avenues]),
    ],
    swiftLanguageModes: [.v6]
)
