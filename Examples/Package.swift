// swift-tools-version: 6.0
import Foundation
import PackageDescription

// The library is the folder above; a path dependency is named after its folder, whatever a clone
// of the repository is called.
let libraryFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let avenues = Target.Dependency.product(name: "Avenues", package: libraryFolder.lastPathComponent)
let avenuesSQLite = Target.Dependency.product(name: "AvenuesSQLite", package: libraryFolder.lastPathComponent)

let package = Package(
    name: "Examples",
    platforms: [.macOS(.v15)],
    products: [
        // For the Benchmarks package, which times `history`'s rows against git itself.
        .library(name: "GitHistory", targets: ["GitHistory"]),
        // For the Fuzz package, which feeds the folder-index parser arbitrary pages.
        .library(name: "RemoteCatalog", targets: ["RemoteCatalog"]),
        // For the Fuzz package, which feeds `pages --filter`'s line filter arbitrary files.
        .library(name: "FilePager", targets: ["FilePager"]),
        // For the Fuzz package, which feeds the terminal code arbitrary text and key presses.
        .library(name: "TerminalUI", targets: ["TerminalUI"]),
    ],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // Raw mode, key decoding, ANSI drawing: all the terminal code, in one place.
        // (and how the tools start and end: one error style).
        .target(name: "TerminalUI", dependencies: [avenues, "CSystemIO", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // Standard descriptors closed at start get /dev/null before anything opens a file (C: it
        // must run before main), and reads and writes that go on after a signal.
        .target(name: "CSystemIO"),
        // Listing files and summarizing them: the rows both examples show.
        .target(name: "FileCatalog", dependencies: [avenues, avenuesSQLite, "CSystemIO", "TerminalUI"]),
        // Files under an HTTP folder index: index parsing, the crawl as a page source, downloads.
        .target(name: "RemoteCatalog", dependencies: [avenues, "FileCatalog", "TerminalUI"]),
        .executableTarget(name: "browse", dependencies: [
            avenues, "FileCatalog", "RemoteCatalog", "TerminalUI",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // git log as paged rows, and each commit's diff stat: what `history` shows.
        .target(name: "GitHistory", dependencies: [avenues, avenuesSQLite, "CSystemIO"]),
        .executableTarget(name: "history", dependencies: [
            avenues, "GitHistory", "TerminalUI",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // A file of any size as numbered lines: `pages FILE`.
        .target(name: "FilePager", dependencies: [avenues, "TerminalUI"]),
        .executableTarget(name: "pages", dependencies: [
            avenues, "CSystemIO", "FileCatalog", "FilePager", "RemoteCatalog", "TerminalUI",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // Fixtures: folder index pages captured from nginx, Apache and Python (read by path).
        .testTarget(name: "ExamplesTests", dependencies: ["FileCatalog", "FilePager", "GitHistory", "RemoteCatalog", "TerminalUI", "history", avenues, avenuesSQLite], exclude: ["Fixtures"]),
    ],
    swiftLanguageModes: [.v6]
)
