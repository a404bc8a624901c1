import Foundation
import Testing
import Avenues

/// README.md's quick start, compiled and run. `.ci/check_readme.py` fails CI if the README's code
/// block and the region between the markers below differ (import lines aside).
@Suite("README quick start")
struct QuickStartTests {
    @Test func theQuickStartRunsToCompletion() async {
        // README quick start: begin
        let files = ["README.md", "Package.swift"]
        let avenue = Avenue<Int, String, Int>(
            storage: MemoryStorage(countLimit: 1_000),    // values, kept by key
            processor: ClosureProcessor { path in        // how a value is made
                try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").count
            }
        )
        let changes = avenue.subscribe()                     // subscribe before asking
        for (row, path) in files.enumerated() {
            avenue.prepareItem(for: path, at: row)       // starts, joins or finds each row's load
        }
        for await event in changes.prefix(files.count) {
            print(files[event.index], avenue.item(at: event.index).map { "\($0) lines" } ?? "\(event.change)")
        }
        // README quick start: end
        #expect(avenue.statistics.loadsInFlight == 0)
    }
}
