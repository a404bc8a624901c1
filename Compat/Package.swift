// swift-tools-version: 6.0
import Foundation
import PackageDescription

// The names a rename replaced (deprecated aliases, in the product AvenuesAsyncMuxCompat, and DESIGN.md's
// contract names in Avenues itself) still compile
// and do what their replacements do. A package of its own because calling a deprecated name warns,
// and a warning in the library's tests fails CI; here the warnings are the point. See CONTRIBUTING.md.
let libraryFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let avenues = Target.Dependency.product(name: "Avenues", package: libraryFolder.lastPathComponent)
let compat = Target.Dependency.product(name: "AvenuesAsyncMuxCompat", package: libraryFolder.lastPathComponent)

let package = Package(
    name: "Compat",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    dependencies: [.package(path: "..")],
    targets: [
        .testTarget(name: "SeedNamesTests", dependencies: [avenues, compat]),
        // DESIGN.md's contract names, with `import Avenues` alone.
        .testTarget(name: "ContractNamesTests", dependencies: [avenues]),
    ],
    swiftLanguageModes: [.v6]
)
