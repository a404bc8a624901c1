import Avenues
import Foundation
import Synchronization

// Downloads every URL listed in a file (one per line) through a fresh AsyncMedia, `--concurrency`
// at a time, and prints the wall time of each run: the Avenues side of `keepalive-bench.py`, which
// runs `curl --parallel` on the same URLs beside it.
//
// Usage: media-bench URL-LIST [--ca-file PEM] [--concurrency 6] [--runs 3]
//        media-bench --latency BIG-URL SMALL-URL [--ca-file PEM]
//   (downloads BIG-URL while fetching SMALL-URL?n=1, ?n=2, … one after another through another
//   AsyncMedia on the same transport, and prints those small requests' latencies)

struct Options {
    var list = ""
    var caFile: String?
    var concurrency = 6
    var runs = 3
    var latency: (big: URL, small: URL)?

    init(_ arguments: [String]) {
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--ca-file": caFile = rest.popFirst()
            case "--concurrency": concurrency = rest.popFirst().flatMap(Int.init) ?? concurrency
            case "--runs": runs = rest.popFirst().flatMap(Int.init) ?? runs
            case "--latency":
                if let big = rest.popFirst().flatMap(URL.init(string:)), let small = rest.popFirst().flatMap(URL.init(string:)) {
                    latency = (big, small)
                }
            default: list = argument
            }
        }
    }
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
if let (big, small) = options.latency {
    let transport: (any DownloadTransport)? = {
        #if os(Linux)
        return try? CurlTransport(caFile: options.caFile)
        #else
        return nil
        #endif
    }()
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("media-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    let downloads = AsyncMedia(directory: folder.appendingPathComponent("big"), transport: transport)
    let others = AsyncMedia(directory: folder.appendingPathComponent("small"), transport: transport)
    let clock = ContinuousClock()
    let start = clock.now
    let done = Mutex(false)
    let download = Task {
        defer { done.withLock { $0 = true } }
        return try await downloads.file(for: big)
    }
    var latencies: [Duration] = []
    var n = 0
    while !done.withLock({ $0 }) {
        n += 1
        let asked = clock.now
        _ = try? await others.file(for: URL(string: small.absoluteString + "?n=\(n)") ?? small)
        latencies.append(clock.now - asked)
    }
    let elapsed = clock.now - start
    let bigSize = ((try? await download.value).flatMap { try? FileManager.default.attributesOfItem(atPath: $0.path)[.size] as? NSNumber })?.int64Value ?? 0
    let sorted = latencies.sorted()
    guard !sorted.isEmpty else {
        print("big: done before any small request")
        exit(0)
    }
    func ms(_ d: Duration) -> String { String(format: "%.1f", Double(d.components.attoseconds) / 1e15 + Double(d.components.seconds) * 1000) }
    print("big: \(bigSize) bytes in \(ms(elapsed)) ms; \(sorted.count) small requests meanwhile: median \(ms(sorted[sorted.count / 2])) ms, p99 \(ms(sorted[min(sorted.count - 1, sorted.count * 99 / 100)])) ms, worst \(ms(sorted[sorted.count - 1])) ms")
    exit(0)
}

guard let text = try? String(contentsOfFile: options.list, encoding: .utf8) else {
    FileHandle.standardError.write(Data("media-bench: cannot read the URL list \(options.list); usage: media-bench URL-LIST [--ca-file PEM] [--concurrency N] [--runs N]\n".utf8))
    exit(1)
}
let urls = text.split(separator: "\n").compactMap { URL(string: String($0)) }
let transport: (any DownloadTransport)?
#if os(Linux)
do {
    transport = try CurlTransport(caFile: options.caFile)
} catch {
    FileHandle.standardError.write(Data("media-bench: \(error)\n".utf8))
    exit(1)
}
#else
transport = nil
#endif

for run in 1 ... options.runs {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("media-bench-\(UUID().uuidString)")
    let media = AsyncMedia(directory: folder, maxConcurrentDownloads: options.concurrency, transport: transport)
    let clock = ContinuousClock()
    let start = clock.now
    let failures = await downloadAll(urls, through: media)
    let elapsed = clock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    print("run \(run): \(urls.count) files in \(String(format: "%.3f", seconds)) s, \(failures) failed")
    try? FileManager.default.removeItem(at: folder)
}

/// Downloads every URL at once through `media`; returns how many failed. A discarding group, off the
/// main actor: nothing wakes a collecting thread once per file.
nonisolated func downloadAll(_ urls: [URL], through media: AsyncMedia) async -> Int {
    final class Failures: Sendable { let count = Atomic<Int>(0) }
    let failures = Failures()
    await withDiscardingTaskGroup { group in
        for url in urls {
            group.addTask { if (try? await media.file(for: url)) == nil { failures.count.add(1, ordering: .relaxed) } }
        }
    }
    return failures.count.load(ordering: .relaxed)
}
