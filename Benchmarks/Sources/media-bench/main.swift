import Avenues
import Foundation
import Synchronization

// Downloads every URL listed in a file (one per line) through a fresh AsyncMedia, `--concurrency`
// at a time, and prints the wall time of each run: the Avenues side of `keepalive-bench.py`, which
// runs `curl --parallel` on the same URLs beside it.
//
// Each run prints its wall time and the process's CPU time during it (user + system, every thread).
//
// Usage: media-bench URL-LIST [--ca-file PEM] [--concurrency 6] [--runs 3] [--threads N] [--timeline] [--list]
//   (--threads: how many threads drive libcurl, CurlTransport.defaultThreads by default;
//    --timeline: also when the 1st, 6th, 50th, 100th, 500th, 1000th… file of each run arrived;
//    --list: one `files(for:)` for the whole list instead of a task calling `file(for:)` per URL;
//    --callback: one `files(for:answer:)`, answered by callback: no task woken per file)
//        media-bench URL-LIST --transport-only [--atomic] [--answers] [--prepared] [--ca-file PEM] [--concurrency 6] [--runs 3]
//   (no AsyncMedia: the transport alone writes each body to a file as curl does, the next request
//   started from the end of the last — TransportOnly.swift; --atomic: a file with no name linked into
//   place, as AsyncMedia commits on Linux; --answers: each file handed to a reading task;
//   --prepared: those files opened ahead, in batches, by a task on the pool)
//        media-bench --latency BIG-URL SMALL-URL [--ca-file PEM]
//   (downloads BIG-URL while fetching SMALL-URL?n=1, ?n=2, … one after another through another
//   AsyncMedia on the same transport, and prints those small requests' latencies)

struct Options {
    var list = ""
    var caFile: String?
    var concurrency = 6
    var runs = 3
    var timeline = false
    var oneList = false
    var callback = false
    var latency: (big: URL, small: URL)?
    var transportOnly: TransportOnlyOptions?
    var threads = CurlTransportThreads.default

    init(_ arguments: [String]) {
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--ca-file": caFile = rest.popFirst()
            case "--concurrency": concurrency = rest.popFirst().flatMap(Int.init) ?? 0  // not a number: refused below
            case "--runs": runs = rest.popFirst().flatMap(Int.init) ?? 0
            case "--threads": threads = rest.popFirst().flatMap(Int.init) ?? 0
            case "--timeline": timeline = true
            case "--list": oneList = true
            case "--callback": callback = true
            case "--transport-only": transportOnly = transportOnly ?? TransportOnlyOptions()
            case "--atomic": transportOnly = transportOnly ?? TransportOnlyOptions(); transportOnly?.atomic = true
            case "--answers": transportOnly = transportOnly ?? TransportOnlyOptions(); transportOnly?.answers = true
            case "--prepared": transportOnly = transportOnly ?? TransportOnlyOptions(); transportOnly?.prepared = true
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
guard options.concurrency >= 1, options.runs >= 1, options.threads >= 1 else {
    FileHandle.standardError.write(Data("media-bench: --concurrency, --runs and --threads take a whole number of 1 or more\n".utf8))
    exit(2)
}
if let (big, small) = options.latency {
    let transport: (any DownloadTransport)? = {
        #if os(Linux)
        return try? CurlTransport(caFile: options.caFile, threads: options.threads)
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
    transport = try CurlTransport(caFile: options.caFile, threads: options.threads)
} catch {
    FileHandle.standardError.write(Data("media-bench: \(error)\n".utf8))
    exit(1)
}
#else
transport = nil
#endif

if let only = options.transportOnly, let transport {
    for run in 1 ... options.runs {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("media-bench-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            FileHandle.standardError.write(Data("media-bench: cannot make \(folder.path): \(error)\n".utf8))
            exit(1)
        }
        let clock = ContinuousClock()
        let cpuBefore = processCPUSeconds()
        let start = clock.now
        let failures = await transportOnly(urls, through: transport, into: folder.path, concurrency: options.concurrency, options: only)
        let elapsed = clock.now - start
        let cpu = processCPUSeconds() - cpuBefore
        print("run \(run): \(urls.count) files in \(String(format: "%.3f", seconds(elapsed))) s, \(failures) failed, cpu \(String(format: "%.3f", cpu)) s")
        try? FileManager.default.removeItem(at: folder)
    }
    exit(0)
}

for run in 1 ... options.runs {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("media-bench-\(UUID().uuidString)")
    let media = AsyncMedia(directory: folder, maxConcurrentDownloads: options.concurrency, transport: transport)
    let clock = ContinuousClock()
    let cpuBefore = processCPUSeconds()
    let start = clock.now
    let (failures, arrivals) = options.callback ? await downloadByCallback(urls, through: media, timeline: options.timeline)
        : options.oneList ? await downloadList(urls, through: media, timeline: options.timeline)
        : await downloadAll(urls, through: media, timeline: options.timeline)
    let elapsed = clock.now - start
    let cpu = processCPUSeconds() - cpuBefore
    print("run \(run): \(urls.count) files in \(String(format: "%.3f", seconds(elapsed))) s, \(failures) failed, cpu \(String(format: "%.3f", cpu)) s")
    if options.timeline, !arrivals.isEmpty {
        let marks = ([1, 6, 50, 100, 500, 1_000, 1_500, 2_000, 5_000, 10_000] + [arrivals.count]).filter { $0 >= 1 && $0 <= arrivals.count }
        let sorted = arrivals.sorted()
        print("  arrived: " + Array(Set(marks)).sorted().map { "#\($0) \(String(format: "%.1f", seconds(sorted[$0 - 1]) * 1000)) ms" }.joined(separator: ", "))
    }
    try? FileManager.default.removeItem(at: folder)
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// User and system time of the whole process so far, in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    #if os(Linux)
    let who = RUSAGE_SELF.rawValue
    #else
    let who = RUSAGE_SELF
    #endif
    guard getrusage(who, &usage) == 0 else { return 0 }
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// Downloads every URL at once through `media`; returns how many failed and, with `timeline`, when
/// each file arrived after the start. A discarding group, off the main actor: nothing wakes a
/// collecting thread once per file.
nonisolated func downloadAll(_ urls: [URL], through media: AsyncMedia, timeline: Bool) async -> (failures: Int, arrivals: [Duration]) {
    final class Tally: Sendable {
        let failures = Atomic<Int>(0)
        let arrivals = Mutex<[Duration]>([])
    }
    let tally = Tally()
    let clock = ContinuousClock()
    let start = clock.now
    await withDiscardingTaskGroup { group in
        for url in urls {
            group.addTask {
                if (try? await media.file(for: url)) == nil { tally.failures.add(1, ordering: .relaxed) }
                if timeline {
                    let arrived = clock.now - start
                    tally.arrivals.withLock { $0.append(arrived) }
                }
            }
        }
    }
    return (tally.failures.load(ordering: .relaxed), tally.arrivals.withLock { $0 })
}

/// Downloads every URL through one ``AsyncMedia/files(for:priority:answer:)``; returns how many
/// failed and, with `timeline`, when each file arrived after the start.
nonisolated func downloadByCallback(_ urls: [URL], through media: AsyncMedia, timeline: Bool) async -> (failures: Int, arrivals: [Duration]) {
    final class Tally: Sendable {
        let failures = Atomic<Int>(0)
        let left: Atomic<Int>
        let arrivals = Mutex<[Duration]>([])
        init(_ count: Int) { left = Atomic(count) }
    }
    guard !urls.isEmpty else { return (0, []) }
    let tally = Tally(urls.count)
    let clock = ContinuousClock()
    let start = clock.now
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        media.files(for: urls) { answer in
            if case .failure = answer.result { tally.failures.add(1, ordering: .relaxed) }
            if timeline {
                let arrived = clock.now - start
                tally.arrivals.withLock { $0.append(arrived) }
            }
            if tally.left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.resume() }
        }
    }
    return (tally.failures.load(ordering: .relaxed), tally.arrivals.withLock { $0 })
}

/// Downloads every URL through one ``AsyncMedia/files(for:priority:)``; returns how many failed and,
/// with `timeline`, when each file arrived after the start. Off the main actor, like `downloadAll`.
nonisolated func downloadList(_ urls: [URL], through media: AsyncMedia, timeline: Bool) async -> (failures: Int, arrivals: [Duration]) {
    let clock = ContinuousClock()
    let start = clock.now
    var failures = 0
    var arrivals: [Duration] = []
    for await answer in media.files(for: urls) {
        if case .failure = answer.result { failures += 1 }
        if timeline { arrivals.append(clock.now - start) }
    }
    return (failures, arrivals)
}

/// The transport threads media-bench asks for unless `--threads` says.
enum CurlTransportThreads {
    #if os(Linux)
    static var `default`: Int { CurlTransport.defaultThreads }
    #else
    static var `default`: Int { 1 }
    #endif
}
