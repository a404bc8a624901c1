import Avenues
import Benchmark
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

// Each benchmark measures one thing and sits beside its reference in the same run; the figure that
// matters is the ratio (these machines are shared and noisy). Targets are in Benchmarks/README.md.

/// State prepared by `setup` closures and read by the measured ones.
final class Fixtures: Sendable {
    static let shared = Fixtures()
    let avenue = Mutex<Avenue<Int, Int, Int>?>(nil)
    let pagedRows = Mutex<(PagedRows<CountingSource>, Range<Int>)?>(nil)
    let reference = LockedDictionaryReference(count: 10_000)
    let asyncMux = AsyncMuxHitReference(count: 100)
    let asyncMuxStructure = AsyncMuxStructureReference { $0 }
    let multiplexer = Multiplexer<Int> { 42 }
    let map = MultiplexerMap<Int, Int> { $0 }
    let server = Mutex<LocalServer?>(nil)
}

/// Suspends until `count` rows of `avenue` have been told their state changed.
func waitForChanges(_ changes: AvenueChanges<Int>, count: Int) async {
    var seen = 0
    for await _ in changes {
        seen += 1
        if seen == count { return }
    }
}

let rows = 10_000
let sleep10ms: @Sendable () async -> Int = {
    try? await Task.sleep(for: .milliseconds(10))
    return 42
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .throughput, .mallocCountTotal], maxDuration: .seconds(2), maxIterations: 1_000)

    // MARK: item(at:) on a loaded avenue vs a Mutex<[Int: V]> read — target ≤ 2x

    Benchmark("item(at:) on 10,000 loaded rows", configuration: .init(scalingFactor: .mega), closure: { benchmark in
        guard let avenue = Fixtures.shared.avenue.withLock({ $0 }) else { return }
        for index in benchmark.scaledIterations { blackHole(avenue.item(at: index % rows)) }
    }, setup: {
        let avenue = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: ClosureProcessor { $0 * 2 })
        let changes = avenue.subscribe()
        for row in 0..<rows { avenue.prepareItem(for: row, at: row) }
        await waitForChanges(changes, count: rows)
        Fixtures.shared.avenue.withLock { $0 = avenue }
    })

    Benchmark("item(at:) reference: Mutex<[Int: V]> read", configuration: .init(scalingFactor: .mega)) { benchmark in
        let reference = Fixtures.shared.reference
        for index in benchmark.scaledIterations { blackHole(reference.value(at: index % rows)) }
    }

    // MARK: PagedRows.item(at:) on resident rows vs the same Mutex<[Int: V]> read — target ≤ 2x

    Benchmark("PagedRows item(at:) on its resident rows", configuration: .init(scalingFactor: .mega), closure: { benchmark in
        guard let (paged, resident) = Fixtures.shared.pagedRows.withLock({ $0 }) else { return }
        let (first, count) = (resident.lowerBound, resident.count)
        for index in benchmark.scaledIterations { blackHole(paged.item(at: first + index % count)) }
    }, setup: {
        // Scrolled down 1,000 rows of 10,000,000, a screen at a time: pages of 50, at most 1,000
        // rows resident.
        let paged = PagedRows(source: CountingSource(count: 10_000_000))
        let changes = paged.subscribe()
        var iterator = changes.makeAsyncIterator()
        for top in stride(from: 0, through: 960, by: 40) {
            paged.show(top..<top + 40)
            while (top..<top + 40).contains(where: { paged.item(at: $0) == nil }), await iterator.next() != nil {}
        }
        let rows = (0..<1_100).filter { paged.item(at: $0) != nil }
        guard let first = rows.first, let last = rows.last, rows.count == last - first + 1 else { return }
        Fixtures.shared.pagedRows.withLock { $0 = (paged, first..<last + 1) }
    })

    // MARK: 10,000 waiters on one key with 10 ms work — target: one run, ≤ 1.5x (a), ≥ 5x faster than (b)

    let waiters = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 20)

    Benchmark("10,000 waiters: AutoProcessor", configuration: waiters) { _ in
        let runs = Atomic<Int>(0)
        let processor = AutoProcessor<Int, Int> { _ in
            runs.add(1, ordering: .relaxed)
            return await sleep10ms()
        }
        await withTaskGroup(of: Int.self) { group in
            for _ in 0..<10_000 { group.addTask { (try? await processor.value(for: 1)) ?? 0 } }
            for await value in group { blackHole(value) }
        }
        precondition(runs.load(ordering: .relaxed) == 1, "10,000 waiters caused more than one run")
    }

    Benchmark("10,000 waiters reference (a): continuation list", configuration: waiters) { _ in
        let reference = ContinuationListReference()
        await withTaskGroup(of: Int.self) { group in
            for _ in 0..<10_000 { group.addTask { await reference.value(sleep10ms) } }
            for await value in group { blackHole(value) }
        }
    }

    Benchmark("10,000 waiters reference (b): actor + await task.value", configuration: waiters) { _ in
        let reference = TaskValueReference()
        await withTaskGroup(of: Int.self) { group in
            for _ in 0..<10_000 { group.addTask { await reference.value(sleep10ms) } }
            for await value in group { blackHole(value) }
        }
    }

    Benchmark("10,000 waiters: Multiplexer.value()", configuration: waiters) { _ in
        let multiplexer = Multiplexer<Int> { await sleep10ms() }
        await withTaskGroup(of: Int.self) { group in
            for _ in 0..<10_000 { group.addTask { (try? await multiplexer.value()) ?? 0 } }
            for await value in group { blackHole(value) }
        }
    }

    // MARK: 100,000 distinct keys with instant work — target ≥ 1,000,000 items/s through AutoProcessor

    let distinct = Benchmark.Configuration(metrics: [.wallClock, .throughput, .mallocCountTotal], scalingFactor: .kilo, maxDuration: .seconds(5), maxIterations: 50)

    Benchmark("100,000 distinct keys: AutoProcessor", configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 50)) { _ in
        let processor = AutoProcessor<Int, Int> { $0 }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let left = Atomic<Int>(100_000)
            for key in 0..<100_000 {
                processor.claim(key) { _ in
                    if left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.resume() }
                }
            }
        }
    }

    Benchmark("100,000 distinct keys: Avenue rows", configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 50)) { _ in
        let avenue = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: ClosureProcessor { $0 })
        let changes = avenue.subscribe()
        for row in 0..<100_000 { avenue.prepareItem(for: row, at: row) }
        await waitForChanges(changes, count: 100_000)
    }

    // 100,000 distinct keys, one task, instant fetch: every request a miss — target ≥ 2× the reference

    Benchmark("100,000 distinct keys: MultiplexerMap.value(for:)", configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 20)) { _ in
        let map = MultiplexerMap<Int, Int> { $0 }
        for key in 0..<100_000 { blackHole(try? await map.value(for: key)) }
    }

    Benchmark("100,000 distinct keys reference: AsyncMux structure", configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 20)) { _ in
        let reference = AsyncMuxStructureReference { $0 }
        for key in 0..<100_000 { blackHole(try? await reference.request(key: key)) }
    }

    // The floor of any design that runs a fetch in a task other than the caller's (so that a caller
    // cancelled while others wait does not cancel the fetch): one task per key, awaited.
    Benchmark("100,000 distinct keys floor: a Task per key, awaited", configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 20)) { _ in
        let fetch: @Sendable (Int) async throws -> Int = { $0 }
        for key in 0..<100_000 { blackHole(try? await Task { try await fetch(key) }.value) }
    }

    // MARK: MemoryStorage with eviction vs a plain Dictionary

    Benchmark("MemoryStorage set+get, 1,000-entry limit, evicting", configuration: distinct) { benchmark in
        let storage = MemoryStorage<Int, Int>(countLimit: 1_000)
        for index in benchmark.scaledIterations {
            storage.set(index, for: index % 4_000)
            blackHole(storage.value(for: (index &* 7) % 4_000))
        }
    }

    Benchmark("MemoryStorage reference: plain Dictionary set+get", configuration: distinct) { benchmark in
        var dictionary: [Int: Int] = [:]
        for index in benchmark.scaledIterations {
            dictionary[index % 4_000] = index
            blackHole(dictionary[(index &* 7) % 4_000])
        }
    }

    // MARK: DiskStorage 10,000 x 4 KiB write then read vs raw temp write + rename, Data(contentsOf:) — target ≤ 1.5x

    let disk = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal, .syscalls], maxDuration: .seconds(10), maxIterations: 5)
    let payload = Data((0..<4_096).map { UInt8(truncatingIfNeeded: $0) })

    Benchmark("DiskStorage 10,000 x 4 KiB write then read", configuration: disk) { _ in
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bench-disk-\(UUID().uuidString)")
        let storage = DiskStorage<Int>(directory: folder)
        for key in 0..<10_000 { try? storage.write(payload, for: key) }
        for key in 0..<10_000 { blackHole(storage.value(for: key)) }
        try? FileManager.default.removeItem(at: folder)
    }

    Benchmark("DiskStorage reference: temp write + rename, Data(contentsOf:)", configuration: disk) { _ in
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bench-raw-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for key in 0..<10_000 { try? RawFiles.write(payload, to: folder, name: String(key)) }
        for key in 0..<10_000 { blackHole(try? RawFiles.read(from: folder, name: String(key))) }
        try? FileManager.default.removeItem(at: folder)
    }

    // MARK: Multiplexer cache hits (ns) — targets: ≤ 0.5× AsyncMux's hit path, ≤ 4× the Mutex read

    Benchmark("cache hit reference: AsyncMux (actor, Date expiry), one key", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let reference = Fixtures.shared.asyncMux
        for _ in benchmark.scaledIterations { blackHole(await reference.request(key: 0)) }
    }

    Benchmark("cache hit reference: AsyncMux (actor, Date expiry), 100 keys", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let reference = Fixtures.shared.asyncMux
        for index in benchmark.scaledIterations { blackHole(await reference.request(key: index % 100)) }
    }

    Benchmark("cache hit reference: AsyncMux structure (actor, fetcher per key), 100 keys", configuration: .init(scalingFactor: .kilo), closure: { benchmark in
        let reference = Fixtures.shared.asyncMuxStructure
        for index in benchmark.scaledIterations { blackHole(try? await reference.request(key: index % 100)) }
    }, setup: {
        for key in 0..<100 { _ = try await Fixtures.shared.asyncMuxStructure.request(key: key) }
    })

    Benchmark("Multiplexer.value() cache hit", configuration: .init(scalingFactor: .kilo), closure: { benchmark in
        let multiplexer = Fixtures.shared.multiplexer
        for _ in benchmark.scaledIterations { blackHole(try? await multiplexer.value()) }
    }, setup: {
        _ = try await Fixtures.shared.multiplexer.value()
    })

    Benchmark("MultiplexerMap.value(for:) cache hit", configuration: .init(scalingFactor: .kilo), closure: { benchmark in
        let map = Fixtures.shared.map
        for index in benchmark.scaledIterations { blackHole(try? await map.value(for: index % 100)) }
    }, setup: {
        for key in 0..<100 { _ = try await Fixtures.shared.map.value(for: key) }
    })

    // MARK: AsyncMedia from a local server: throughput and peak memory — target: growth ≤ 32 MiB

    let media = Benchmark.Configuration(metrics: [.wallClock, .throughput, .peakMemoryResident], maxDuration: .seconds(10), maxIterations: 5)
    func download(_ size: Int) async {
        guard let server = Fixtures.shared.server.withLock({ $0 }) else { return }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bench-media-\(UUID().uuidString)")
        let downloader = AsyncMedia(directory: folder)
        blackHole(try? await downloader.file(for: server.url("/bytes/\(size)")))
        try? FileManager.default.removeItem(at: folder)
    }
    let startServer: Benchmark.BenchmarkSetupHook = {
        let server = try LocalServer()
        Fixtures.shared.server.withLock { $0 = server }
    }

    Benchmark("AsyncMedia download 1 MiB (memory baseline)", configuration: media, closure: { _ in
        await download(1 << 20)
    }, setup: startServer)

    Benchmark("AsyncMedia download 256 MiB", configuration: media, closure: { _ in
        await download(256 << 20)
    }, setup: startServer)

    // References for the wire speed — targets: ≥ 0.9× a bare URLSession download, ≥ 0.7× curl.
    Benchmark("AsyncMedia reference: URLSession.download(from:) 256 MiB", configuration: media, closure: { _ in
        guard let server = Fixtures.shared.server.withLock({ $0 }) else { return }
        let session = URLSession(configuration: .ephemeral)
        if let (file, _) = try? await session.download(from: server.url("/bytes/\(256 << 20)")) {
            try? FileManager.default.removeItem(at: file)
        }
        session.invalidateAndCancel()
    }, setup: startServer)

    Benchmark("AsyncMedia reference: curl to a file 256 MiB", configuration: media, closure: { _ in
        guard let server = Fixtures.shared.server.withLock({ $0 }), let curlPath = executable(named: "curl") else { return }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bench-curl-\(UUID().uuidString)")
        let curl = Process()
        curl.executableURL = curlPath
        curl.arguments = ["-s", "-o", file.path, server.url("/bytes/\(256 << 20)").absoluteString]
        try? curl.run()
        curl.waitUntilExit()
        try? FileManager.default.removeItem(at: file)
    }, setup: startServer)

    regressionGates()
}
