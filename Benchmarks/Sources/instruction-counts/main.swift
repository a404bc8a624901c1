import Avenues
import Dispatch
import Foundation
import Synchronization

// Runs one hot path `operations` times, for `Benchmarks/instruction-counts.py` to count under
// callgrind: it runs each scenario at n and 2n operations and divides the difference by n, so start-up
// and the scenario's setup cancel out. The entry point is synchronous on purpose: valgrind 3.19
// crashes when an async main parks the main thread in dispatch_main, but not when a detached task
// runs the work while the main thread waits on a semaphore.
//
// The references are the timed benchmarks' own (References.swift is a link to that file).

/// A scenario: setup (not measured: the same at n and 2n) returns the measured loop.
typealias Scenario = @Sendable () async -> @Sendable (Int) async -> Void

/// Stops the run when a scenario would not measure what it says (a hit that misses, say).
func check(_ condition: Bool, _ what: String) {
    if !condition {
        FileHandle.standardError.write(Data("instruction-counts: expected \(what)\n".utf8))
        exit(1)
    }
}

/// Keeps `value` alive without the optimizer removing the work that made it.
@inline(never)
func keep<T>(_ value: T) { withExtendedLifetime(value) {} }

let scenarios: KeyValuePairs<String, Scenario> = [
    "mutex-read": {
        let reference = LockedDictionaryReference(count: 1_000)
        return { operations in for index in 0..<operations { keep(reference.value(at: index % 1_000)) } }
    },
    "avenue-item-at": {
        // A thousand rows loaded by one worker: the setup runs at n and at 2n, and what it costs varies
        // with thread scheduling; loading 10,000 rows made that variance up to 200 instructions a read.
        let avenue = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: AutoProcessor<Int, Int>(maxConcurrent: 1) { $0 * 2 })
        let changes = avenue.subscribe()
        for row in 0..<1_000 { avenue.prepareItem(for: row, at: row) }
        var seen = 0
        for await _ in changes {
            seen += 1
            if seen == 1_000 { break }
        }
        // Loads still finishing on other threads would be counted with the reads: wait them out.
        while avenue.tableSizes.loads > 0 { await Task.yield() }
        check((0..<1_000).allSatisfy { avenue.item(at: $0) == $0 * 2 }, "the avenue's rows are loaded")
        return { operations in for index in 0..<operations { keep(avenue.item(at: index % 1_000)) } }
    },
    "prefetcher-show": {
        // A list at rest redrawn: each frame shows the same 40 rows, and the prefetcher prepares its
        // whole window again (40 visible, 40 ahead, 10 behind), every row already loaded.
        let avenue = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: AutoProcessor<Int, Int>(maxConcurrent: 1) { $0 * 2 })
        let prefetcher = RowPrefetcher(avenue: avenue, ahead: 40, behind: 10) { $0 }
        let changes = avenue.subscribe()
        prefetcher.show(100 ..< 140)
        var seen = 0
        for await _ in changes {
            seen += 1
            if seen == 90 { break }
        }
        while avenue.tableSizes.loads > 0 { await Task.yield() }
        check((90 ..< 180).allSatisfy { avenue.item(at: $0) == $0 * 2 }, "the window's rows are loaded")
        return { operations in for _ in 0..<operations { prefetcher.show(100 ..< 140) } }
    },
    "asyncmux-a-hit": {
        let reference = AsyncMuxHitReference(count: 100)
        check(await reference.request(key: 99) == 99, "reference (a) hits")
        return { operations in for index in 0..<operations { keep(await reference.request(key: index % 100)) } }
    },
    "asyncmux-a2-hit": {
        let reference = AsyncMuxStructureReference { $0 }
        for key in 0..<100 { _ = try? await reference.request(key: key) }
        check((try? await reference.request(key: 99)) == 99, "reference (a') hits")
        return { operations in for index in 0..<operations { keep(try? await reference.request(key: index % 100)) } }
    },
    "multiplexer-hit": {
        let multiplexer = Multiplexer<Int> { 42 }
        check((try? await multiplexer.value()) == 42, "the multiplexer has its value")
        return { operations in for _ in 0..<operations { keep(try? await multiplexer.value()) } }
    },
    "multiplexer-map-hit": {
        let map = MultiplexerMap<Int, Int> { $0 }
        for key in 0..<100 { _ = try? await map.value(for: key) }
        check(map.cachedValue(for: 99) == 99, "the map holds its 100 keys")
        return { operations in for index in 0..<operations { keep(try? await map.value(for: index % 100)) } }
    },
    "asyncmux-a2-miss": {
        return { operations in
            let reference = AsyncMuxStructureReference { $0 }
            for key in 0..<operations { keep(try? await reference.request(key: key)) }
        }
    },
    "task-per-key-miss": {
        return { operations in
            let fetch: @Sendable (Int) async throws -> Int = { $0 }
            for key in 0..<operations { keep(try? await Task { try await fetch(key) }.value) }
        }
    },
    "multiplexer-map-miss": {
        return { operations in
            let map = MultiplexerMap<Int, Int> { $0 }
            for key in 0..<operations { keep(try? await map.value(for: key)) }
            check(map.cachedValue(for: operations - 1) == operations - 1, "every miss fetched and stored")
        }
    },
    "asyncmedia-file": {
        // A list of small files, each downloaded once through AsyncMedia's whole path — the claim, the
        // partial file, the transfer and its head, the commit, the answer — from a transport in this
        // process, so that what is counted is AsyncMedia's own work per file, not a network's or
        // libcurl's (valgrind 3.19 cannot run media-bench). A transport of one's own also makes
        // AsyncMedia start each request from a task, which CurlTransport's requests are spared.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("instruction-counts-\(UUID().uuidString)")
        let media = AsyncMedia(directory: folder, maxConcurrentDownloads: 6, transport: InProcessTransport())
        // Made here, at n and 2n alike: making a URL costs as much as a fifth of a download.
        let urls = (0..<2_000).compactMap { URL(string: "http://127.0.0.1:8080/files/f\($0).txt") }
        return { operations in
            check(operations <= urls.count, "at most \(urls.count) files")
            let failed = Atomic<Int>(0)
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let left = Atomic<Int>(operations)
                media.files(for: urls.prefix(operations)) { answer in
                    if case .failure = answer.result { failed.add(1, ordering: .relaxed) }
                    if left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.resume() }
                }
            }
            check(failed.load(ordering: .relaxed) == 0, "every file downloaded")
            try? FileManager.default.removeItem(at: folder)
        }
    },
    "autoprocessor-claim": {
        return { operations in
            let processor = AutoProcessor<Int, Int> { $0 }
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let left = Atomic<Int>(operations)
                for key in 0..<operations {
                    processor.claim(key) { _ in
                        if left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.resume() }
                    }
                }
            }
        }
    },
]

/// Answers each request on a thread of its own, as a network transport's thread would: a 200 with a
/// 2 KiB body in one piece. It cannot be cancelled (nothing here cancels).
final class InProcessTransport: DownloadTransport, Sendable {
    private let queue = Mutex<(sinks: [any DownloadSink], sleeping: Bool)>(([], false))
    private let wake = DispatchSemaphore(value: 0)
    private static let body = [UInt8](repeating: 0x61, count: 2_048)

    init() {
        let thread = Thread { [self] in run() }
        thread.start()
    }

    var decodesContentCodings: Bool { false }

    func start(_ request: DownloadRequest, into sink: any DownloadSink) -> DownloadHandle {
        let sleeping = queue.withLock { state in
            state.sinks.append(sink)
            defer { state.sleeping = false }
            return state.sleeping
        }
        if sleeping { wake.signal() }
        return DownloadHandle {}
    }

    private func run() {
        let fields = [HTTPField(name: "Content-Type", value: "text/plain"), HTTPField(name: "Content-Length", value: "\(Self.body.count)")]
        while true {
            let taken = queue.withLock { state -> [any DownloadSink] in
                defer { state.sinks = [] }
                if state.sinks.isEmpty { state.sleeping = true }
                return state.sinks
            }
            guard !taken.isEmpty else {
                wake.wait()
                continue
            }
            for sink in taken {
                if sink.head(status: 200, fields: fields) {
                    _ = Self.body.withUnsafeBytes { sink.body($0) }
                }
                sink.end(nil)
            }
        }
    }
}

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2, let name = arguments.first, let operations = arguments.last.flatMap({ Int($0) }),
      operations > 0, let scenario = scenarios.first(where: { $0.key == name })?.value
else {
    let names = scenarios.map(\.key).joined(separator: ", ")
    FileHandle.standardError.write(Data("usage: instruction-counts <scenario> <operations>\nscenarios: \(names)\n".utf8))
    exit(2)
}

let finished = DispatchSemaphore(value: 0)
Task.detached {
    let measured = await scenario()
    await measured(operations)
    finished.signal()
}
finished.wait()
