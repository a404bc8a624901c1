import Testing
@testable import Avenues

@Suite("Rate limit", .timeLimit(.minutes(5)))
struct RateLimitTests {
    /// A processor limited to `rate` whose work returns its key and records the order runs started in.
    static func recordingProcessor<Key: Hashable & Sendable>(
        maxConcurrent: Int, rate: RateLimit, of _: Key.Type = Key.self
    ) -> (processor: AutoProcessor<Key, Key>, starts: Shared<[Key]>) {
        let starts = Shared([Key]())
        let processor = AutoProcessor<Key, Key>(maxConcurrent: maxConcurrent, rateLimit: rate) { key in
            starts.withLock { $0.append(key) }
            return key
        }
        return (processor, starts)
    }

    @Test func runsStartAtTheRateOnceTheBurstIsSpentWhateverTheWorkers() async throws {
        let clock = SleepClock()
        let (processor, starts) = Self.recordingProcessor(maxConcurrent: 6, rate: RateLimit(runsPerSecond: 10, burst: 2, clock: clock), of: Int.self)
        let tasks = (0..<6).map { key in Task { try await processor.value(for: key) } }
        await eventually("the burst started and the rest wait their turn") { starts.value.count == 2 && clock.sleepers == 4 }
        for expected in 3...6 {
            #expect(starts.value.count == expected - 1)
            clock.advance(by: .milliseconds(100))
            await eventually("one more start per 100 ms") { starts.value.count == expected }
        }
        for task in tasks { _ = try await task.value }
        #expect(Set(starts.value) == Set(0..<6))
        // After a quiet spell the bucket is full again.
        clock.advance(by: .seconds(1))
        starts.withLock { $0 = [] }
        let again = (10..<12).map { key in Task { try await processor.value(for: key) } }
        for task in again { _ = try await task.value }
        #expect(starts.value.count == 2)
        #expect(clock.sleepers == 0)
    }

    @Test func aJobCancelledWhileWaitingNeverStartsAndGivesItsTurnBack() async throws {
        let clock = SleepClock()
        let (processor, starts) = Self.recordingProcessor(maxConcurrent: 4, rate: RateLimit(runsPerSecond: 1, clock: clock), of: String.self)
        _ = try await processor.value(for: "first")
        let waiting = Task { try await processor.value(for: "waiting") }
        await eventually("the second run waits for its turn") { clock.sleepers == 1 }
        processor.cancel(for: "waiting")
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(clock.sleepers == 0)
        // The caller is answered at once; the cancelled run gives its turn back when its worker
        // ends. Asking before then took the turn after it (2 s), and the test waited for ever.
        await eventually("the cancelled run ended") { processor.tableSizes.isIdle }
        // The cancelled job's turn (at 1 s) is the next one's: not 2 s.
        let next = Task { try await processor.value(for: "next") }
        await eventually("the next run waits") { clock.sleepers == 1 }
        clock.advance(by: .seconds(1))
        #expect(try await next.value == "next")
        #expect(starts.value == ["first", "next"])
    }

    @Test func visibleWorkTakesTheNextTurnBeforeQueuedPrefetches() async throws {
        let clock = SleepClock()
        let (processor, starts) = Self.recordingProcessor(maxConcurrent: 1, rate: RateLimit(runsPerSecond: 1, clock: clock), of: String.self)
        _ = try await processor.value(for: "first")
        let prefetches = (0..<5).map { index in Task { try await processor.value(for: "prefetch \(index)", priority: .prefetch) } }
        await eventually("one prefetch holds the worker, waiting its turn") { clock.sleepers == 1 }
        let visible = Task { try await processor.value(for: "visible") }
        await eventually("the visible request is queued") { processor.state(for: "visible") == .queued }
        clock.advance(by: .seconds(1))  // the waiting prefetch had this turn
        await eventually("the next job waits for its turn") { starts.value.count == 2 && clock.sleepers == 1 }
        clock.advance(by: .seconds(1))
        #expect(try await visible.value == "visible")
        #expect(starts.value.count == 3)
        #expect(starts.value.last == "visible")
        for _ in 0..<4 { clock.advance(by: .seconds(1)); await Task.yield() }
        for task in prefetches { task.cancel() }
    }
    @Test func aPriorityRaisedWhileARunWaitsForItsTurnReachesTheWork() async throws {
        let clock = SleepClock()
        let seen = Shared([String: LoadPriority]())
        // A scheduling chain's processor: each run tells its work the priority it runs at.
        let processor = AutoProcessor<String, String>(
            maxConcurrent: 2, reservedForVisible: 0, rateLimit: RateLimit(runsPerSecond: 1, clock: clock), executor: nil,
            propagatesPriority: true
        ) { key, run in
            let priority = run?.value
            seen.withLock { $0[key] = priority }
            return key
        }
        _ = try await processor.value(for: "first")  // spends the burst
        let done = Shared(false)
        let claim = processor.claim("later", priority: .prefetch) { _ in done.withLock { $0 = true } }
        await eventually("the run waits for its turn") { clock.sleepers == 1 }
        processor.setPriority(.visible, for: claim)
        clock.advance(by: .seconds(1))
        await eventually("the run finished") { done.value }
        #expect(seen.value["later"] == .visible)
    }
}
