import Avenues
import Benchmark
import Synchronization

/// The hot paths again, measured only by what does not depend on the machine's load: allocations
/// (instructions are counted by `instruction-counts.py` under callgrind). Their static thresholds are checked in
/// `Thresholds/` and compared by `.ci/run` (`benchmark thresholds check --filter "gate-.*"`; the names have no spaces, which package-benchmark 1.38 writes as `_` but reads as spaces), so a
/// change that makes a cache hit or a row read allocate, or adds work to a claim, fails CI. Timed
/// figures stay out of CI: they are the other benchmarks, read by hand.
func regressionGates() {
    let exact = Benchmark.Configuration(
        metrics: [.mallocCountTotal], scalingFactor: .kilo, maxDuration: .seconds(2), maxIterations: 20,
        thresholds: [.mallocCountTotal: .init(absolute: [.p90: 0])]
    )

    Benchmark("gate-avenue-item-at", configuration: exact, closure: { benchmark in
        guard let avenue = Fixtures.shared.avenue.withLock({ $0 }) else { return }
        for index in benchmark.scaledIterations { blackHole(avenue.item(at: index % rows)) }
    }, setup: {
        if Fixtures.shared.avenue.withLock({ $0 }) != nil { return }
        let avenue = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: ClosureProcessor { $0 * 2 })
        let changes = avenue.subscribe()
        for row in 0..<rows { avenue.prepareItem(for: row, at: row) }
        await waitForChanges(changes, count: rows)
        Fixtures.shared.avenue.withLock { $0 = avenue }
    })

    Benchmark("gate-multiplexer-hit", configuration: exact, closure: { benchmark in
        let multiplexer = Fixtures.shared.multiplexer
        for _ in benchmark.scaledIterations { blackHole(try? await multiplexer.value()) }
    }, setup: {
        _ = try await Fixtures.shared.multiplexer.value()
    })

    Benchmark("gate-multiplexer-map-hit", configuration: exact, closure: { benchmark in
        let map = Fixtures.shared.map
        for index in benchmark.scaledIterations { blackHole(try? await map.value(for: index % 100)) }
    }, setup: {
        for key in 0..<100 { _ = try await Fixtures.shared.map.value(for: key) }
    })

    // A claim allocates its waiter's callback and the worker's job; the count per key must not grow.
    Benchmark(
        "gate-autoprocessor-10000-keys",
        configuration: .init(
            metrics: [.mallocCountTotal], maxDuration: .seconds(5), maxIterations: 10,
            thresholds: [.mallocCountTotal: .init(relative: [.p90: 10])]
        )
    ) { _ in
        let processor = AutoProcessor<Int, Int>(maxConcurrent: 1) { $0 }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let left = Atomic<Int>(10_000)
            for key in 0..<10_000 {
                processor.claim(key) { _ in
                    if left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.resume() }
                }
            }
        }
    }
}
