// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Avenues",
    // Synchronization.Mutex needs these Apple releases; Linux has it with Swift 6.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Avenues", targets: ["Avenues"]),
        // A Storage in one SQLite database: a product of its own, so that depending on Avenues
        // alone needs no SQLite headers.
        .library(name: "AvenuesSQLite", targets: ["AvenuesSQLite"]),
        // The names renames replaced (AsyncMux's among them), deprecated: code written for AsyncMux
        // compiles with this one more import, and `import Avenues` alone shows one dialect.
        .library(name: "AvenuesAsyncMuxCompat", targets: ["AvenuesAsyncMuxCompat"]),
    ],
    targets: [
        .target(name: "Avenues", dependencies: ["CAvenuesNetwork"]),
        // libcurl and zlib, loaded at run time: no headers, no link-time dependency.
        .target(name: "CAvenuesNetwork", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        .target(name: "AvenuesSQLite", dependencies: ["Avenues", "CSQLite"]),
        .target(name: "AvenuesAsyncMuxCompat", dependencies: ["Avenues"]),
        .testTarget(
            name: "AvenuesTests",
            dependencies: ["Avenues", "AvenuesTestSupport", "DiskStorageCrashWriter"],
            exclude: ["Media/media_test_server.py"]  // run by the AsyncMedia tests, found next to them
        ),
        // A child process for the crash-safety test: it writes entries until the test kills it.
        // It also exits in the middle of a download (the exit test counts libcurl's steps: CAvenuesNetwork).
        .executableTarget(name: "DiskStorageCrashWriter", dependencies: ["Avenues", "CAvenuesNetwork"], path: "Tests/DiskStorageCrashWriter"),
        .testTarget(name: "AvenuesSQLiteTests", dependencies: ["AvenuesSQLite", "AvenuesTestSupport", "SQLiteStorageWorker"]),
        // What both test targets share: the seeded generator every randomized test draws from.
        .target(name: "AvenuesTestSupport", path: "Tests/AvenuesTestSupport"),
        // A child process for the SQLite tests: several of it share one database; one is killed mid-write.
        .executableTarget(name: "SQLiteStorageWorker", dependencies: ["AvenuesSQLite"], path: "Tests/SQLiteStorageWorker"),
    ],
    swiftLanguageModes: [.v6]
)
