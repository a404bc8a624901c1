import Testing
@testable import Avenues

/// How many values an avenue makes at once is said by `init`'s `maxConcurrent`: the processor's own
/// limit by default, or the number given.
@Suite("Avenue concurrency", .timeLimit(.minutes(5)))
struct AvenueConcurrencyTests {
    @Test func byDefaultAnAutoProcessorIsSharedAndAClosureGetsSixWorkers() {
        let shared = AutoProcessor<Int, Int>(maxConcurrent: 3) { $0 }
        let first = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: shared)
        let second = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: shared)
        #expect(first.processor === shared && second.processor === shared)
        let closure = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: ClosureProcessor { $0 })
        #expect(closure.processor.maxConcurrent == 6)
    }

    @Test func aSchedulingProcessorKeepsItsOwnLimitAndTheAvenueOnlyClaims() throws {
        let map = MultiplexerMap<String, Int>(maxConcurrentFetches: 2) { $0.count }
        let avenue = Avenue<Int, String, Int>(storage: map.storage, processor: map)
        #expect(avenue.processor.maxConcurrent == .max)
        #expect(map._core.fetcher.maxConcurrent == 2)
    }

    @Test func aNumberRunsAnyProcessorInANewAutoProcessorOfThatManyWorkers() async {
        let shared = AutoProcessor<Int, Int>(maxConcurrent: 3) { $0 }
        let limited = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: shared, maxConcurrent: 1)
        #expect(limited.processor !== shared)
        #expect(limited.processor.maxConcurrent == 1)

        let work = ControlledWork<Int, Int>()
        let avenue = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: work, maxConcurrent: 2)
        for row in 0..<5 { avenue.prepareItem(for: row, at: row) }
        await work.waitUntilStarted(0)
        await work.waitUntilStarted(1)
        #expect(work.totalStarts == 2)  // the other three wait for a worker
        work.succeed(0, with: 0)
        await eventually("a third starts when one ends") { work.totalStarts == 3 }
        #expect(work.totalStarts == 3)
        avenue.cancelAll()
    }
}
