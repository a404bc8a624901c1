import Foundation
import ScrollSimulation

// Plays the standard scroll script (100,000 rows, a 40-row screen, 6 workers, seeded latencies)
// on a virtual clock under each strategy and prints what each cost. Deterministic: every run
// prints the same table.
let script = UserScript.standard
print("scroll-sim: \(script.rows) rows, \(script.viewport)-row screen, \(script.tops.count) frames of \(script.frame), 6 workers, latency median \(WorkLatency.standard.medianMilliseconds) ms")
print("")
let header = ["strategy", "placeholder row-frames", "works started", "works wasted", "(cancelled + unshown)", "mean time-to-visible"]
var table: [[String]] = [header]
var results: [SimulationResult] = []
for strategy in Strategy.compared {
    let result = simulate(strategy)
    results.append(result)
    let milliseconds = Double(result.meanTimeToVisible.components.attoseconds) / 1e15 + Double(result.meanTimeToVisible.components.seconds) * 1_000
    table.append([
        strategy.description, String(result.placeholderRowFrames), String(result.worksStarted), String(result.worksWasted),
        "(\(result.worksCancelled) + \(result.worksUnshown))", String(Int(milliseconds.rounded())) + " ms",
    ])
}
let widths = (0..<header.count).map { column in table.map { $0[column].count }.max() ?? 0 }
for (index, row) in table.enumerated() {
    print(row.enumerated().map { column, cell in
        column == 0 ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            : String(repeating: " ", count: widths[column] - cell.count) + cell
    }.joined(separator: "  "))
    if index == 0 { print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
}
if let baseline = results.first {
    print("")
    for result in results.dropFirst() {
        let placeholders = Double(result.placeholderRowFrames) / Double(max(1, baseline.placeholderRowFrames))
        let wasted = Double(result.worksWasted) / Double(max(1, baseline.worksWasted))
        print("\(result.strategy): placeholders \(String(format: "%.2f", placeholders))x, wasted work \(String(format: "%.2f", wasted))x of visible-only without cancel")
    }
}

// Admission control: the 40/10 prefetcher with 0 to 3 of the 6 workers kept from prefetch work.
print("")
print("admission control (RowPrefetcher 40/10, 6 workers):")
for (name, latency) in [("standard", WorkLatency.standard), ("heavy tail", .heavyTail)] {
    for reserved in 0...3 {
        let result = simulate(.prefetcher(ahead: 40, behind: 10), reservedForVisible: reserved, latency: latency)
        let milliseconds = Double(result.meanTimeToVisible.components.attoseconds) / 1e15 + Double(result.meanTimeToVisible.components.seconds) * 1_000
        print("  \(name), reservedForVisible \(reserved): placeholder row-frames \(result.placeholderRowFrames), started \(result.worksStarted), wasted \(result.worksWasted), mean time-to-visible \(Int(milliseconds.rounded())) ms")
    }
}
