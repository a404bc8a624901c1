// swift-tools-version: 6.1
import Foundation
import PackageDescription

// The library is the folder above; a path dependency is named after its folder, whatever a clone
// of the repository is called.
let libraryFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let avenues = Target.Dependency.product(name: "Avenues", package: libraryFolder.lastPathComponent)
let avenuesSQLite = Target.Dependency.product(name: "AvenuesSQLite", package: libraryFolder.lastPathComponent)

let package = Package(
    name: "Benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(path: "../Examples"),
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // Timed suites, each benchmark beside its reference (`swift package benchmark`).
        .executableTarget(
            name: "AvenuesBenchmarks",
            dependencies: [avenues, .product(name: "Benchmark", package: "package-benchmark")],
            path: "Benchmarks/AvenuesBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "package-benchmark")]
        ),
        // The deterministic scroll simulation, and the command that prints its table.
        .target(name: "ScrollSimulation", dependencies: [avenues]),
        .executableTarget(name: "scroll-sim", dependencies: ["ScrollSimulation"]),
        .testTarget(name: "ScrollSimulationTests", dependencies: ["ScrollSimulation"]),
        // The hot paths run n and 2n times, for `instruction-counts.py` to count under callgrind.
        .executableTarget(name: "instruction-counts", dependencies: [avenues]),
        // Paging's memory bound on 10,000,000 synthetic rows, and `history`'s rows beside git.
        .executableTarget(name: "paging-bench", dependencies: [
            avenues, .product(name: "GitHistory", package: "Examples"),
        ]),
        // FilteredRows over lines in memory and over `history`'s log, for `filter-bench.py` to time
        // beside fzf and git log | grep.
        .executableTarget(name: "filter-bench", dependencies: [
            avenues, .product(name: "GitHistory", package: "Examples"),
        ]),
        // Many small files through AsyncMedia, for `keepalive-bench.py` to time beside curl.
        .executableTarget(name: "media-bench", dependencies: [avenues]),
        // Small values in DiskStorage and SQLiteStorage, for `storage-bench.py` to time beside
        // Python's sqlite3.
        .executableTarget(name: "storage-bench", dependencies: [avenues, avenuesSQLite]),
    ],
    swiftLanguageModes: [.v6]
)
