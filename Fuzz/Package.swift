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
    dependencies: [.package(path: ".."), .package(path: "../Examples")],
    targets: [
        // libFuzzer's driver, started from each fuzzer's entry point.
        .target(name: "FuzzDriver"),
        .executableTarget(name: "DiskEntryFuzzer", dependencies: [avenues, "FuzzDriver"]),
        // These use internal parsers: built with -enable-testing (README.md here).
        .executableTarget(name: "ResponseFuzzer", dependencies: [avenues, "FuzzDriver"]),
        // The examples' parsers of outside input: folder index pages, git log output, a file's lines.
        .executableTarget(name: "IndexFuzzer", dependencies: [.product(name: "RemoteCatalog", package: "Examples"), "FuzzDriver"]),
        .executableTarget(name: "GitLogFuzzer", dependencies: [.product(name: "GitHistory", package: "Examples"), "FuzzDriver"]),
        .executableTarget(name: "LineFilterFuzzer", dependencies: [avenues, .product(name: "FilePager", package: "Examples"), "FuzzDriver"]),
        .executableTarget(name: "OpeningLinesFuzzer", dependencies: [.product(name: "FilePager", package: "Examples"), "FuzzDriver"]),
        .executableTarget(
            name: "ScreenTextFuzzer",
            dependencies: [.product(name: "TerminalUI", package: "Examples"), .product(name: "FilePager", package: "Examples"), "FuzzDriver"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
