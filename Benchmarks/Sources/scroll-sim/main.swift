import Foundation
import ScrollSimulation

// Plays scripted (or recorded) scrolling on a virtual clock under each strategy and prints what each
// cost. Deterministic: every run prints the same figures.
//
//   scroll-sim                 the tables: every workload × strategy, then admission control
//   scroll-sim --json          one JSON object per line, per workload and strategy
//   scroll-sim --trace FILE    a recorded session (see Benchmarks/README.md) under every strategy
//   scroll-sim --traces DIR    every recorded session in DIR (Benchmarks/Traces)
//   scroll-sim --forks         pairs of scripts that part after the same start (Fork): both sides'
//                              targets, and the bound for a policy that cannot see the future
//   scroll-sim --workload NAME only that workload (e.g. standard, jumps/heavy-tail)
//   scroll-sim --strategies fixed-40-10,adaptive,clairvoyant   only those strategies (any fixed-A-B)

let arguments = Array(CommandLine.arguments.dropFirst())
@MainActor func option(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
let json = arguments.contains("--json")
var workloads = Workload.all
if let path = option("--trace") {
    do {
        let script = try UserScript(trace: String(contentsOfFile: path, encoding: .utf8))
        let name = URL(fileURLWithPath: path).lastPathComponent
        workloads = [Workload(name: name, script: script, latency: .standard), Workload(name: name + "/heavy-tail", script: script, latency: .heavyTail)]
    } catch {
        FileHandle.standardError.write(Data("scroll-sim: \(path): \(error)\n".utf8))
        exit(1)
    }
}
if let folder = option("--traces") {
    do {
        workloads = try Workload.recorded(in: URL(fileURLWithPath: folder, isDirectory: true))
    } catch {
        FileHandle.standardError.write(Data("scroll-sim: \(folder): \(error)\n".utf8))
        exit(1)
    }
}
if arguments.contains("--forks") {
    // Each fork under both latency profiles: what each strategy does on either side; the onward
    // script's target (the best fixed window + 5 %) and the back script's waste budget (1.5× 40/10's);
    // and the bound on the onward script for a policy that started no more than the budget ahead.
    for fork in Fork.all {
        for (profile, latency) in [("", WorkLatency.standard), ("/heavy-tail", .heavyTail)] {
            let analysis = ForkAnalysis(fork, latency: latency)
            print("\(fork.name)\(profile): the scripts part at frame \(fork.frame)")
            var table = [["strategy", "onward placeholders", "onward wasted", "back placeholders", "back wasted"]]
            for (onward, back) in zip(analysis.onward, analysis.back) {
                table.append([onward.strategy.description, String(onward.placeholderRowFrames), String(onward.worksWasted),
                              String(back.placeholderRowFrames), String(back.worksWasted)])
            }
            printTable(table)
            print("onward target (best fixed + 5 %): \(analysis.onwardTarget); back waste budget (1.5× 40/10): \(analysis.backBudget)")
            print("bound on onward, started at most the budget ahead before the fork: \(analysis.boundWithinBudget) (\(analysis.boundWithinBudget > analysis.onwardTarget ? "over the target: no policy meets both" : "within the target"))\n")
        }
    }
    exit(0)
}
if let name = option("--workload") {
    workloads = workloads.filter { $0.name == name }
    if workloads.isEmpty {
        FileHandle.standardError.write(Data("scroll-sim: no workload \(name); try one of \(Workload.all.map(\.name).joined(separator: ", "))\n".utf8))
        exit(2)
    }
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
}

func printTable(_ rows: [[String]]) {
    let widths = (0..<rows[0].count).map { column in rows.map { $0[column].count }.max() ?? 0 }
    for (index, row) in rows.enumerated() {
        print(row.enumerated().map { column, cell in
            column == 0 ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                : String(repeating: " ", count: widths[column] - cell.count) + cell
        }.joined(separator: "  "))
        if index == 0 { print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
    }
}

var strategies = Strategy.compared
if let names = option("--strategies") {
    let wanted = names.split(separator: ",").map(String.init)
    // Any fixed window may be named (`fixed-60-10`), not only the four compared.
    let extra = wanted.compactMap { name -> Strategy? in
        let parts = name.split(separator: "-")
        guard parts.count == 3, parts[0] == "fixed", let ahead = Int(parts[1]), let behind = Int(parts[2]), ahead >= 0, behind >= 0,
              !strategies.contains(where: { $0.name == name })
        else { return nil }
        return .prefetcher(ahead: ahead, behind: behind)
    }
    strategies = strategies.filter { wanted.contains($0.name) } + extra
}
for workload in workloads {
    let results = strategies.map { simulate($0, script: workload.script, latency: workload.latency) }
    if json {
        for result in results {
            let object: [String: Any] = [
                "workload": workload.name, "strategy": result.strategy.name,
                "placeholder_row_frames": result.placeholderRowFrames, "started": result.worksStarted,
                "wasted": result.worksWasted,
                "mean_time_to_visible_ms": (milliseconds(result.meanTimeToVisible) * 10).rounded() / 10,
                "p95_time_to_visible_ms": (milliseconds(result.p95TimeToVisible) * 10).rounded() / 10,
            ]
            if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
                print(String(decoding: data, as: UTF8.self))
            }
        }
        continue
    }
    let bound = results.last { $0.strategy == .clairvoyant }
    print("\(workload.name): \(workload.script.rows) rows, \(workload.script.viewport)-row screen, \(workload.script.tops.count) frames, 6 workers")
    var table = [["strategy", "placeholder row-frames", "vs bound", "started", "wasted", "(cancelled + unshown)", "mean TTV", "p95 TTV"]]
    for result in results {
        let gap = bound.map { String(format: "%.2f×", Double(result.placeholderRowFrames) / Double(max(1, $0.placeholderRowFrames))) } ?? ""
        table.append([
            result.strategy.description, String(result.placeholderRowFrames), gap, String(result.worksStarted),
            String(result.worksWasted), "(\(result.worksCancelled) + \(result.worksUnshown))",
            "\(Int(milliseconds(result.meanTimeToVisible).rounded())) ms", "\(Int(milliseconds(result.p95TimeToVisible).rounded())) ms",
        ])
    }
    printTable(table)
    print("")
}

if !json, option("--trace") == nil, option("--traces") == nil, option("--workload") == nil {
    // Admission control: the 40/10 prefetcher with 0 to 3 of the 6 workers kept from prefetch work.
    print("admission control (RowPrefetcher 40/10, 6 workers, standard script):")
    for (name, latency) in [("standard", WorkLatency.standard), ("heavy tail", .heavyTail)] {
        for reserved in 0...3 {
            let result = simulate(.prefetcher(ahead: 40, behind: 10), reservedForVisible: reserved, latency: latency)
            print("  \(name), reservedForVisible \(reserved): placeholder row-frames \(result.placeholderRowFrames), started \(result.worksStarted), wasted \(result.worksWasted), mean time-to-visible \(Int(milliseconds(result.meanTimeToVisible).rounded())) ms")
        }
    }
}
