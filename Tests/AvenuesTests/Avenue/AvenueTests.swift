import Foundation
import Dispatch
import Testing
@testable import Avenues

/// An avenue over controlled work, with every callback logged.
struct AvenueFixture {
    let work: ControlledWork<String, Int>
    let storage = MemoryStorage<String, Int>()
    let avenue: Avenue<Int, String, Int>
    let told = EventLog<Int>()
    let errors = EventLog<Int>()
    /// The clock of retry waits; tests move it (retry policy: no jitter).
    let clock = TestClock()

    init(
        maxConcurrent: Int = 6,
        honoursCancellation: Bool = true,
        callbackMode: CallbackMode = .completingThread,
        retryPolicy: RetryPolicy = RetryPolicy(jitter: 0)
    ) {
        let work = ControlledWork<String, Int>(honoursCancellation: honoursCancellation)
        self.work = work
        let clock = clock
        avenue = Avenue(
            storage: storage, processor: AutoProcessor(maxConcurrent: maxConcurrent, work), callbackMode: callbackMode,
            retryPolicy: retryPolicy, now: { clock.now }, sleep: { _ in try await Task.sleep(for: .seconds(3_600)) }
        )
        let told = told, errors = errors
        avenue.onStateChange = { told.append($0) }
        avenue.onError = { _, row in errors.append(row) }
    }

    /// Waits until the avenue's own and its processor's tables are empty.
    func waitUntilIdle() async {
        await eventually("the avenue and its processor are idle") {
            avenue.tableSizes.loads == 0 && avenue.processor.tableSizes.isIdle
        }
    }
}

@Suite("Avenue", .timeLimit(.minutes(5)))
struct AvenueTests {
    @Test("Avenues 0.1 fault: a second row asking for a key in flight was silently dropped", .tags(.anchorFault))
    func twoRowsAskingForOneKeyInFlightShareOneRunAndBothAreFilledAndTold() async {
        let f = AvenueFixture()
        f.avenue.prepareItem(for: "k", at: 1)
        await f.work.waitUntilStarted("k")
        f.avenue.prepareItem(for: "k", at: 2)
        #expect(f.avenue.state(at: 2).isLoading)
        f.work.succeed("k", with: 7)
        await f.told.wait(forCount: 2)
        #expect(Set(f.told.elements) == [1, 2])
        #expect(f.avenue.item(at: 1) == 7)
        #expect(f.avenue.item(at: 2) == 7)
        #expect(f.work.starts(of: "k") == 1)
        #expect(f.avenue.statistics.loadsStarted == 1)
    }

    @Test func cancellingOneOfTwoRowsSharingAKeyKeepsTheRun() async {
        let f = AvenueFixture()
        f.avenue.prepareItem(for: "k", at: 1)
        f.avenue.prepareItem(for: "k", at: 2)
        await f.work.waitUntilStarted("k")
        f.avenue.cancel(at: 1)
        #expect(f.avenue.processor.state(for: "k") == .running)
        #expect(f.work.cancellationsSeen(by: "k") == 0)
        f.work.succeed("k", with: 3)
        await f.told.wait(for: 2)
        #expect(f.avenue.item(at: 2) == 3)
        #expect(f.avenue.item(at: 1) == nil)  // released rows show nothing
        #expect(f.told.elements == [2])
    }

    @Test func cancellingBothRowsSharingAKeyCancelsTheWork() async {
        let f = AvenueFixture()
        f.avenue.prepareItem(for: "k", at: 1)
        f.avenue.prepareItem(for: "k", at: 2)
        await f.work.waitUntilStarted("k")
        f.avenue.cancel(at: 1)
        f.avenue.cancel(at: 2)
        await eventually("the work saw the cancellation") { f.work.cancellationsSeen(by: "k") == 1 }
        await f.waitUntilIdle()
        #expect(f.told.count == 0)
        #expect(f.avenue.statistics.loadsCancelled == 1)
    }

    @Test("Avenues 0.1 fault: a late completion of a cancelled run cancelled the new run", .tags(.anchorFault))
    func aCancelledRunThatFinishesLateNeverOverwritesOrCancelsTheNewerRun() async {
        let f = AvenueFixture(honoursCancellation: false)
        f.avenue.prepareItem(for: "k", at: 1)
        await f.work.waitUntilStarted("k")
        f.avenue.cancel(at: 1)
        await eventually("the old work saw the cancellation") { f.work.cancellationsSeen(by: "k") == 1 }
        f.avenue.prepareItem(for: "k", at: 1)
        await f.work.waitUntilStarted("k", times: 2)

        f.work.succeed("k", with: 111)  // the cancelled run, late
        await eventually("the cancelled worker left") { f.avenue.processor.tableSizes.workers == 1 }
        #expect(f.avenue.state(at: 1).isLoading)
        #expect(f.avenue.item(at: 1) == nil)
        #expect(f.storage.value(for: "k") == nil)
        #expect(f.work.cancellationsSeen(by: "k") == 1)

        f.work.succeed("k", with: 222)
        await f.told.wait(for: 1)
        #expect(f.avenue.item(at: 1) == 222)
        #expect(f.told.elements == [1])
    }

    @Test("Avenues 0.1 fault: cancelAll left keys .running forever", .tags(.anchorFault))
    func cancelAllThenPrepareItemWorks() async {
        let f = AvenueFixture()
        for row in 0..<5 { f.avenue.prepareItem(for: "k\(row)", at: row) }
        await f.work.waitUntilStarted("k0")
        f.avenue.cancelAll()
        #expect(f.avenue.tableSizes.isIdle)
        for row in 0..<5 { #expect(f.avenue.processor.state(for: "k\(row)") == .idle) }
        f.avenue.prepareItem(for: "k0", at: 0)
        await f.work.waitUntilStarted("k0", times: 2)
        f.work.succeed("k0", with: 5)
        await f.told.wait(for: 0)
        #expect(f.avenue.item(at: 0) == 5)
    }

    @Test("Nuke fault: a start then stop in the same tick still ran the work", .tags(.anchorFault), arguments: [false, true])
    func workReleasedBeforeAWorkerPicksItUpNeverRuns(processorBusy: Bool) async {
        // The promise is about workers, not ticks: on the default executor a worker may pick work up
        // the moment it is queued (before the fix the README promised more, and 22 % of 200,000
        // prepare-then-cancel pairs ran). Here the work cannot be picked up in between: the only
        // worker is busy, or the executor holds every worker until the test runs it.
        let executor = HeldExecutor()
        let work = ControlledWork<String, Int>()
        let avenue = Avenue<Int, String, Int>(
            storage: MemoryStorage(), processor: AutoProcessor(maxConcurrent: 1, executor: processorBusy ? nil : executor, work)
        )
        let told = EventLog<Int>()
        avenue.onStateChange = { told.append($0) }
        if processorBusy {
            avenue.prepareItem(for: "busy", at: 100)
            await work.waitUntilStarted("busy")
        }
        avenue.prepareItem(for: "doomed", at: 1)
        avenue.cancel(at: 1)
        // A marker queued behind it on the single worker: by the time the marker runs, the doomed
        // key would have run first if it were ever going to.
        avenue.prepareItem(for: "marker", at: 2)
        if processorBusy { work.succeed("busy", with: 0) } else { executor.runAll() }
        await work.waitUntilStarted("marker")
        work.succeed("marker", with: 1)
        if !processorBusy { executor.runAll() }
        await told.wait(for: 2)
        #expect(work.starts(of: "doomed") == 0)
        #expect(!told.elements.contains(1))
    }

    @Test func onTheDefaultExecutorReleasedWorkIsNeverReportedAndRunningWorkIsCancelled() async {
        // The guarantee that holds whatever the scheduling: a load released right after it was
        // prepared never reaches its row, and work that did start has its task cancelled.
        let started = Shared(0), finishedUncancelled = Shared(0)
        let processor = AutoProcessor(maxConcurrent: 4) { (key: Int) -> Int in
            started.withLock { $0 += 1 }
            for _ in 0..<3 { await Task.yield() }
            if !Task.isCancelled { finishedUncancelled.withLock { $0 += 1 } }
            return key
        }
        let avenue = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: processor)
        let told = Shared(0)
        avenue.onStateChange = { _ in told.withLock { $0 += 1 } }
        for key in 0..<20_000 {
            avenue.prepareItem(for: key, at: key % 64)
            avenue.cancel(at: key % 64)
        }
        await eventually("the processor is idle") { processor.tableSizes.isIdle }
        // A released load never shows in its row. A callback another thread had already decided to
        // make may still arrive (cancel(at:) never waits for other threads' callbacks): under
        // ThreadSanitizer 51 of 20,000 did, each for a load that had finished, so never more than
        // the loads that started.
        #expect((0..<64).allSatisfy { avenue.item(at: $0) == nil && avenue.key(at: $0) == nil })
        #expect(told.value <= started.value)
        // Work that started was cancelled before it finished, except when it finished before the
        // cancel reached it: a handful at most on a loaded machine, never thousands.
        #expect(finishedUncancelled.value <= started.value)
        #expect(avenue.tableSizes == AvenueTableSizes(rows: 0, loads: 0))
    }

    @Test func rowsOnCanonicallyEquivalentKeysOverADiskStorageShareOneLoadAndBothReadIt() async throws {
        // Swift's String == is canonical equivalence: the avenue and the processor see one key, so
        // the disk must too (before the fix row 1 was told "loaded" and then read nil).
        let folder = TemporaryFolder()
        let work = ControlledWork<String, Data>()
        let avenue = Avenue<Int, String, Data>(
            storage: DiskStorage<String>(directory: folder.child("cache")), processor: AutoProcessor(work)
        )
        let told = EventLog<Int>()
        avenue.onStateChange = { told.append($0) }
        avenue.prepareItem(for: "caf\u{E9}.txt", at: 0)
        avenue.prepareItem(for: "cafe\u{301}.txt", at: 1)
        await work.waitUntilStarted("caf\u{E9}.txt")
        work.succeed("caf\u{E9}.txt", with: Data("menu".utf8))
        await told.wait(forCount: 2)
        #expect(work.totalStarts == 1)
        #expect(avenue.item(at: 0) == Data("menu".utf8))
        #expect(avenue.item(at: 1) == Data("menu".utf8))
    }

    @Test func aFailureSetsFailedCallsOnErrorWithTheRowIsNotCachedAndTheNextPrepareRetries() async {
        let f = AvenueFixture()
        let failures = Locked<[(String, Int)]>([])
        f.avenue.onError = { error, row in
            failures.withLock { $0.append(("\(error)", row)) }
            f.errors.append(row)
        }
        f.avenue.prepareItem(for: "k", at: 4)
        await f.work.waitUntilStarted("k")
        f.work.fail("k", with: TestError("disk on fire"))
        await f.told.wait(for: 4)
        #expect(f.avenue.state(at: 4).error as? TestError == TestError("disk on fire"))
        #expect(failures.withLock { $0.map(\.1) } == [4])
        #expect(failures.withLock { $0.map(\.0) } == ["disk on fire"])
        #expect(f.storage.value(for: "k") == nil)

        f.avenue.prepareItem(for: "k", at: 4)  // within its retry wait: nothing is asked of the work
        #expect(f.avenue.state(at: 4).retryAt == f.clock.now + .seconds(1))
        #expect(f.work.starts(of: "k") == 1)
        f.clock.advance(by: .seconds(1))
        f.avenue.prepareItem(for: "k", at: 4)
        #expect(f.avenue.state(at: 4).isLoading)
        await f.work.waitUntilStarted("k", times: 2)
        f.work.succeed("k", with: 9)
        await f.told.wait(for: 4, times: 2)
        #expect(f.avenue.item(at: 4) == 9)
        #expect(f.avenue.statistics.loadsFailed == 1)
    }

    @Test func withOneWorkerAVisibleRowRunsBeforeFiftyQueuedPrefetchesAndARaisedRowRunsNext() async {
        let f = AvenueFixture(maxConcurrent: 1)
        f.avenue.prepareItem(for: "busy", at: -1)
        await f.work.waitUntilStarted("busy")
        for row in 0..<50 { f.avenue.prepareItem(for: "p\(row)", at: row, priority: .prefetch) }
        f.avenue.prepareItem(for: "v", at: 999, priority: .visible)
        f.work.succeed("busy", with: 0)
        await f.work.waitUntilStarted("v")
        f.avenue.prepareItem(for: "p30", at: 30, priority: .visible)  // scrolled into view
        f.work.succeed("v", with: 0)
        await f.work.waitUntilStarted("p30")
        #expect(f.work.startOrder == ["busy", "v", "p30"])
        f.avenue.cancelAll()
    }

    @Test func aRowReassignedToAnotherKeyNeverShowsTheOldKeysValue() async {
        let f = AvenueFixture()
        f.avenue.prepareItem(for: "old", at: 0)
        await f.work.waitUntilStarted("old")
        f.avenue.prepareItem(for: "new", at: 0)
        await eventually("the old load is cancelled") { f.work.cancellationsSeen(by: "old") == 1 }
        #expect(f.avenue.item(at: 0) == nil)
        #expect(f.avenue.key(at: 0) == "new")

        // Even when the old key's value is stored by someone else, row 0 shows its own key.
        f.storage.set(1, for: "old")
        #expect(f.avenue.item(at: 0) == nil)
        await f.work.waitUntilStarted("new")
        f.work.succeed("new", with: 2)
        await f.told.wait(for: 0)
        #expect(f.avenue.item(at: 0) == 2)
        #expect(f.told.elements == [0])

        // Moving a loaded row to a stored key shows that key's value at once.
        f.avenue.prepareItem(for: "old", at: 0)
        #expect(f.avenue.item(at: 0) == 1)
    }

    @Test func aStoredValueNeedsNoWorkAndIsReadableRightAfterPrepare() async {
        let f = AvenueFixture()
        f.storage.set(5, for: "k")
        f.avenue.prepareItem(for: "k", at: 3)
        #expect(f.avenue.item(at: 3) == 5)
        #expect(f.avenue.state(at: 3).isLoaded)
        #expect(f.avenue.processor.state(for: "k") == .idle)
        #expect(f.work.totalStarts == 0)
        #expect(f.avenue.statistics.cacheHits == 1)
        #expect(f.told.count == 0)
    }

    @Test func anEvictedValueIsLoadedAgainWhilePreparedAtPrefetchItShowsNothing() async {
        let f = AvenueFixture()
        f.avenue.prepareItem(for: "k", at: 0, priority: .prefetch)
        await f.work.waitUntilStarted("k")
        f.work.succeed("k", with: 1)
        await f.told.wait(for: 0)
        f.storage.removeValue(for: "k")
        // Off screen, nothing is pinned: the row is empty until it is prepared again.
        #expect(f.avenue.state(at: 0).description == "empty" && f.avenue.item(at: 0) == nil)
        f.avenue.prepareItem(for: "k", at: 0, priority: .prefetch)
        await f.work.waitUntilStarted("k", times: 2)
        #expect(f.avenue.state(at: 0).isLoading)
    }

    @Test func anEvictedValueIsLoadedAgain() async {
        let f = AvenueFixture()
        f.avenue.prepareItem(for: "k", at: 0)
        await f.work.waitUntilStarted("k")
        f.work.succeed("k", with: 1)
        await f.told.wait(for: 0)
        f.storage.removeValue(for: "k")
        // The row is visible: it keeps showing what it had, so the screen does not empty itself...
        #expect(f.avenue.state(at: 0).isLoaded && f.avenue.item(at: 0) == 1)
        // ...and preparing it again loads the value storage let go of, showing the old one meanwhile.
        f.avenue.prepareItem(for: "k", at: 0)
        await f.work.waitUntilStarted("k", times: 2)
        #expect(f.avenue.state(at: 0).description == "stale(revalidating)" && f.avenue.item(at: 0) == 1)
        f.work.succeed("k", with: 2)
        await f.told.wait(for: 0, times: 2)
        #expect(f.avenue.item(at: 0) == 2)
    }

    @Test func cancelProcessingStopsTheKeyForEveryRowOfThisAvenueOnly() async {
        let work = ControlledWork<String, Int>()
        let shared = AutoProcessor(work)
        let mine = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: shared)
        let theirs = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: shared)
        let theirTold = EventLog<Int>()
        theirs.onStateChange = { theirTold.append($0) }
        mine.prepareItem(for: "k", at: 1)
        mine.prepareItem(for: "k", at: 2)
        theirs.prepareItem(for: "k", at: 9)
        await work.waitUntilStarted("k")
        mine.cancel(for: "k")
        #expect(mine.key(at: 1) == nil)
        #expect(mine.key(at: 2) == nil)
        #expect(shared.state(for: "k") == .running)  // the other avenue still wants it
        work.succeed("k", with: 4)
        await theirTold.wait(for: 9)
        #expect(theirs.item(at: 9) == 4)
        #expect(work.starts(of: "k") == 1)
    }

    @Test func avenuesSharingAProcessorShareItsRuns() async {
        let work = ControlledWork<String, Int>()
        let shared = AutoProcessor(work)
        let first = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: shared)
        let second = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: shared)
        let told = EventLog<String>()
        first.onStateChange = { told.append("first \($0)") }
        second.onStateChange = { told.append("second \($0)") }
        first.prepareItem(for: "k", at: 0)
        second.prepareItem(for: "k", at: 5)
        await work.waitUntilStarted("k")
        work.succeed("k", with: 8)
        await told.wait(forCount: 2)
        #expect(first.item(at: 0) == 8)
        #expect(second.item(at: 5) == 8)
        #expect(work.starts(of: "k") == 1)
    }

    @Test func aKeyCancelledForEveryoneByTheSharedProcessorLeavesTheRowEmptyAndTellsIt() async {
        let f = AvenueFixture()
        f.avenue.prepareItem(for: "k", at: 0)
        await f.work.waitUntilStarted("k")
        f.avenue.processor.cancel(for: "k")
        await f.told.wait(for: 0)
        #expect(f.avenue.state(at: 0).description == "empty")
        #expect(f.errors.count == 0)
        #expect(f.avenue.key(at: 0) == "k")  // still assigned, so the front end may prepare it again
    }

    @Test("Avenues 0.1 fault: completed states piled up", .tags(.anchorFault))
    func afterTenThousandDistinctKeysCompleteTheTablesHoldNothingForThem() async {
        let processor = AutoProcessor(maxConcurrent: 4) { (key: Int) in key + 1 }
        let avenue = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: processor)
        let told = EventLog<Int>()
        avenue.onStateChange = { told.append($0) }
        for row in 0..<10_000 { avenue.prepareItem(for: row, at: row, priority: row.isMultiple(of: 3) ? .visible : .prefetch) }
        await told.wait(forCount: 10_000)
        await eventually("the workers left") { processor.tableSizes.workers == 0 }
        #expect(processor.tableSizes.isIdle)
        // No load is in flight; what remains is only the row → key assignment the front end made.
        #expect(avenue.tableSizes == AvenueTableSizes(rows: 10_000, loads: 0))
        #expect(avenue.item(at: 9_999) == 10_000)
        for row in 0..<10_000 { avenue.cancel(at: row) }
        #expect(avenue.tableSizes == AvenueTableSizes(rows: 0, loads: 0))
    }

    @Test func aCallbackCanReadItsRowAndCancelItWithoutDeadlock() async {
        let f = AvenueFixture()
        let seen = EventLog<Int?>()
        f.avenue.onStateChange = { [avenue = f.avenue] row in
            let value = avenue.item(at: row)
            avenue.cancel(at: row)  // re-entrant: must not wait for its own delivery
            seen.append(value)      // after the cancel, which the test then checks (TSan ran the check first)
        }
        f.avenue.prepareItem(for: "k", at: 0)
        await f.work.waitUntilStarted("k")
        f.work.succeed("k", with: 6)
        await seen.wait(forCount: 1)
        #expect(seen.elements == [6])
        #expect(f.avenue.key(at: 0) == nil)
    }

    @Test func aCallbackCancellingAnotherRowOfTheSameLoadSilencesThatRow() async {
        let f = AvenueFixture()
        let told = EventLog<Int>()
        f.avenue.onStateChange = { [avenue = f.avenue] row in
            told.append(row)
            avenue.cancel(at: row == 0 ? 1 : 0)
        }
        f.avenue.prepareItem(for: "k", at: 0)
        f.avenue.prepareItem(for: "k", at: 1)
        await f.work.waitUntilStarted("k")
        f.work.succeed("k", with: 1)
        await told.wait(forCount: 1)
        await f.waitUntilIdle()
        #expect(told.count == 1)
    }

    // The tests below block inside callbacks, so their callbacks run on dispatch queues: blocking
    // the completing thread would block one of the few threads of Swift's cooperative pool.

    @Test func cancelFromAnotherThreadNeverWaitsForACallbackAndSilencesRowsNotToldYet() async {
        let f = AvenueFixture(callbackMode: .queue(DispatchQueue(label: "callbacks")))
        let inCallback = EventLog<Int>()
        let release = DispatchSemaphore(value: 0)
        let told = EventLog<Int>()
        f.avenue.onStateChange = { row in
            told.append(row)
            inCallback.append(row)
            release.wait()  // hold the delivery open
        }
        f.avenue.prepareItem(for: "k", at: 0)
        f.avenue.prepareItem(for: "k", at: 1)
        await f.work.waitUntilStarted("k")
        f.work.succeed("k", with: 1)
        await inCallback.wait(forCount: 1)
        let first = inCallback.elements[0]
        let other = first == 0 ? 1 : 0

        // Returns while the callback is still running (before the fix it waited for it).
        let cancelDone = EventLog<Bool>()
        DispatchQueue.global().async { [avenue = f.avenue] in
            avenue.cancel(at: other)
            cancelDone.append(true)
        }
        await cancelDone.wait(forCount: 1)
        #expect(inCallback.count == 1)
        release.signal()
        await f.waitUntilIdle()
        #expect(told.elements == [first])  // the other row's callback was not decided yet: never made
    }

    @Test func aCallbackWaitingForAQueueWhileThatQueueCancelsDoesNotDeadlock() async {
        // The main-thread case: a callback does `main.sync` while the main thread cancels a row.
        let main = DispatchQueue(label: "stands-for-main")
        let f = AvenueFixture(callbackMode: .queue(DispatchQueue(label: "callbacks")))
        let inCallback = DispatchSemaphore(value: 0)
        let told = EventLog<Int>()
        f.avenue.onStateChange = { row in
            inCallback.signal()
            main.sync { told.append(row) }
        }
        let cancelled = EventLog<Int>()
        main.async { [avenue = f.avenue] in
            inCallback.wait()
            avenue.cancel(at: 1)  // before the fix: waited for the callback, which waited for `main`
            cancelled.append(1)
        }
        f.avenue.prepareItem(for: "k", at: 0)
        f.avenue.prepareItem(for: "k", at: 1)
        await f.work.waitUntilStarted("k")
        f.work.succeed("k", with: 1)
        await cancelled.wait(forCount: 1)
        await told.wait(forCount: 1)
        await f.waitUntilIdle()
    }

    @Test func twoAvenuesWhoseCallbacksCancelEachOthersRowsDoNotDeadlock() async {
        let a = AvenueFixture(callbackMode: .queue(DispatchQueue(label: "a"))), b = AvenueFixture(callbackMode: .queue(DispatchQueue(label: "b")))
        let bothInside = DispatchGroup()
        bothInside.enter()
        bothInside.enter()
        let done = EventLog<String>()
        a.avenue.onStateChange = { [other = b.avenue] _ in
            bothInside.leave()
            bothInside.wait()     // both deliveries are running now, on two threads
            other.cancel(at: 7)   // before the fix: waited for b's delivery, which waited for a's
            done.append("a")
        }
        b.avenue.onStateChange = { [other = a.avenue] _ in
            bothInside.leave()
            bothInside.wait()
            other.cancel(at: 7)
            done.append("b")
        }
        for f in [a, b] {
            f.avenue.prepareItem(for: "k", at: 0)
            f.avenue.prepareItem(for: "other", at: 7)
            await f.work.waitUntilStarted("k")
        }
        a.work.succeed("k", with: 1)
        b.work.succeed("k", with: 2)
        await done.wait(forCount: 2)
        #expect(a.avenue.key(at: 7) == nil && b.avenue.key(at: 7) == nil)
    }

    @Test(arguments: [false, true])
    func aCallbackCancellingAKeyForEveryoneThroughTheProcessorIsToldAfterwards(all: Bool) async {
        let f = AvenueFixture()
        let changes = EventLog<String>()
        f.avenue.onStateChange = { [avenue = f.avenue] row in
            changes.append("\(row): \(avenue.state(at: row))")
            // Another row of this avenue waits on "k": before the fix, its cancellation was
            // delivered on this thread inside this delivery ("Recursive call to lock Mutex").
            if row == 0 { if all { avenue.processor.cancelAll() } else { avenue.processor.cancel(for: "k") } }
        }
        f.avenue.prepareItem(for: "a", at: 0)
        f.avenue.prepareItem(for: "k", at: 1)
        f.avenue.prepareItem(for: "k", at: 2)
        await f.work.waitUntilStarted("a")
        await f.work.waitUntilStarted("k")
        f.work.succeed("a", with: 1)
        await changes.wait(forCount: 3)
        #expect(changes.elements.first == "0: loaded")
        #expect(Set(changes.elements.dropFirst()) == ["1: empty", "2: empty"])
        await f.waitUntilIdle()
    }

    @Test func workThatThrowsCancellationErrorItselfFailsTheRowAndIsReported() async {
        let f = AvenueFixture()
        f.avenue.prepareItem(for: "k", at: 0)
        await f.work.waitUntilStarted("k")
        f.work.fail("k", with: CancellationError())  // the work gave up; nobody cancelled it
        await f.errors.wait(for: 0)
        await f.told.wait(for: 0)
        #expect(f.avenue.state(at: 0).error is CancellationError)
        f.avenue.retry(at: 0)  // retried like any failure
        await f.work.waitUntilStarted("k", times: 2)
        f.work.succeed("k", with: 3)
        await f.told.wait(for: 0, times: 2)
        #expect(f.avenue.item(at: 0) == 3)
    }

    @Test func aNotificationQueuedBeforeItsRowWasReassignedOrReleasedIsNeverDelivered() async {
        let queue = DispatchQueue(label: "held-callbacks")
        let f = AvenueFixture(callbackMode: .queue(queue))
        for row in 0..<3 { f.avenue.prepareItem(for: "old", at: row) }
        await f.work.waitUntilStarted("old")
        queue.suspend()  // the completion's notifications wait in the queue
        f.work.succeed("old", with: 1)
        await eventually("the load completed") { f.avenue.tableSizes.loads == 0 }
        f.avenue.prepareItem(for: "new", at: 0)  // reassigned while its notification is queued
        f.avenue.cancel(at: 1)                    // released while its notification is queued
        queue.resume()
        await f.told.wait(for: 2)
        queue.sync {}  // everything queued before has run
        #expect(f.told.elements == [2])
        f.avenue.cancelAll()
    }

    @Test func callbacksRunOnTheGivenQueue() async {
        let queue = DispatchQueue(label: "avenue-callbacks")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let f = AvenueFixture(callbackMode: .queue(queue))
        let onQueue = EventLog<Bool>()
        f.avenue.onStateChange = { _ in onQueue.append(DispatchQueue.getSpecific(key: key) == true) }
        f.avenue.prepareItem(for: "k", at: 0)
        await f.work.waitUntilStarted("k")
        f.work.succeed("k", with: 1)
        await onQueue.wait(forCount: 1)
        #expect(onQueue.elements == [true])
    }

    @Test func callbacksCanRunOnTheMainActor() async {
        let f = AvenueFixture(callbackMode: .mainActor)
        let onMain = EventLog<Bool>()
        f.avenue.onStateChange = { _ in
            onMain.append(MainActor.assumeIsolated { true })
        }
        f.avenue.prepareItem(for: "k", at: 0)
        await f.work.waitUntilStarted("k")
        f.work.succeed("k", with: 1)
        await onMain.wait(forCount: 1)
        #expect(onMain.elements == [true])
    }

    @Test(arguments: [CallbackMode.mainActor, .completingThread])
    func mainActorHandlersRunIsolatedToTheMainActorInEveryMode(mode: CallbackMode) async {
        @MainActor final class Screen {
            var rowsTold: [Int] = []
            var errors: [String] = []
        }
        let f = AvenueFixture(callbackMode: mode)
        let screen = Screen()
        let told = EventLog<Int>()
        f.avenue.onStateChange(onMainActor: { row in   // a @MainActor closure: it touches `screen` directly
            screen.rowsTold.append(row)
            told.append(row)
        })
        f.avenue.onError(onMainActor: { error, row in screen.errors.append("\(row): \(error)") })
        f.avenue.prepareItem(for: "a", at: 0)
        f.avenue.prepareItem(for: "b", at: 1)
        await f.work.waitUntilStarted("a")
        await f.work.waitUntilStarted("b")
        f.work.succeed("a", with: 1)
        f.work.fail("b", with: TestError("no"))
        await told.wait(forCount: 2)
        #expect(await screen.rowsTold.sorted() == [0, 1])
        #expect(await screen.errors.count == 1)
    }

    /// "Never call another component's lock while holding yours": the avenue asks its processor
    /// for a claim after its own lock. The processor's executor is told of the new worker inside
    /// that call, so it looks at the avenue's lock then.
    @Test func theProcessorIsCalledOutsideTheAvenuesLock() async {
        final class LockWatchingExecutor: TaskExecutor, Sendable {
            let avenue = Shared<Avenue<Int, Int, Int>?>(nil)
            /// For each worker started: was the avenue's lock free?
            let lockFree = Shared<[Bool]>([])
            let held = HeldExecutor()

            func enqueue(_ job: consuming ExecutorJob) {
                if let avenue = avenue.withLock({ $0 }) {
                    let free = avenue._state.mutex.withLockIfAvailable { _ in true } ?? false
                    lockFree.withLock { $0.append(free) }
                }
                held.enqueue(job)
            }
        }
        let executor = LockWatchingExecutor()
        let avenue = Avenue<Int, Int, Int>(storage: MemoryStorage(), processor: AutoProcessor(maxConcurrent: 2, executor: executor) { $0 * 2 })
        executor.avenue.withLock { $0 = avenue }
        avenue.prepareItem(for: 1, at: 0)
        avenue.prepareItem(for: 2, at: 1, priority: .prefetch)
        avenue.prepareItem(for: 2, at: 1)  // raised: the claim's priority changes
        #expect(executor.lockFree.withLock { $0 } == [true, true])
        avenue.cancel(at: 0)
        avenue.cancel(at: 1)
        executor.held.runAll()
        executor.avenue.withLock { $0 = nil }
    }

    @Test func changesDeliverEachRowOnceAndSkipRowsReleasedBeforeTheEventIsRead() async {
        let f = AvenueFixture()
        var iterator = f.avenue.subscribe().makeAsyncIterator()
        f.avenue.prepareItem(for: "a", at: 0)
        f.avenue.prepareItem(for: "b", at: 1)
        f.avenue.prepareItem(for: "c", at: 2)
        await f.work.waitUntilStarted("a")
        await f.work.waitUntilStarted("b")
        await f.work.waitUntilStarted("c")
        f.work.succeed("a", with: 1)
        f.work.fail("b", with: TestError("no"))
        f.work.succeed("c", with: 3)
        await f.told.wait(forCount: 3)  // all three events are in the stream now
        f.avenue.cancel(at: 2)          // ...but row 2 is let go before its event is read
        var events: [Int: String] = [:]
        for _ in 0..<2 {
            guard let event = await iterator.next() else { break }
            switch event.change {
            case .loaded: events[event.index] = "loaded"
            case .failed(let error): events[event.index] = "failed \(error)"
            case .cancelled: events[event.index] = "cancelled"
            }
        }
        #expect(events == [0: "loaded", 1: "failed no"])
    }

    @Test func aReaderThatFallsBehindGetsTheNewestEventOfEachRow() async {
        let f = AvenueFixture()
        let changes = f.avenue.subscribe()
        // Listeners are told in the order they were added: once this one is, the subscription was.
        // (`f.told`, added first, was told before the subscription: waiting on it raced the buffer,
        // and failed once in a ThreadSanitizer run, 2026-11-27.)
        let afterSubscription = EventLog<Int>()
        f.avenue.observe { afterSubscription.append($0.index) }
        f.avenue.prepareItem(for: "k", at: 0)
        await f.work.waitUntilStarted("k")
        f.work.fail("k", with: TestError("first try"))
        await afterSubscription.wait(for: 0)
        f.avenue.retry(at: 0)
        await f.work.waitUntilStarted("k", times: 2)
        f.work.succeed("k", with: 2)
        await afterSubscription.wait(for: 0, times: 2)
        #expect(changes.subscription.buffer.bufferedCount == 1)
        var iterator = changes.makeAsyncIterator()
        let event = await iterator.next()
        #expect(event?.index == 0)
        if case .loaded? = event?.change {} else { Issue.record("expected the newest event, got \(String(describing: event))") }
    }

    /// Found by review (2026-11-30): the buffer kept one waiting reader. A second reader's wait
    /// replaced the first's, which then waited for ever, and cancelling the first resumed the second.
    @Test func readersOfOneSubscriptionAtOnceSplitItsEventsAndEachCanBeCancelledAlone() async {
        let f = AvenueFixture()
        let changes = f.avenue.subscribe()
        let buffer = changes.subscription.buffer
        func reader(_ count: Int) -> Task<[Int], Never> {
            Task {
                var iterator = changes.makeAsyncIterator()
                var rows: [Int] = []
                while rows.count < count, let event = await iterator.next() { rows.append(event.index) }
                return rows
            }
        }
        let cancelled = reader(1)
        await eventually("the first reader waits") { buffer.waitingReaders == 1 }
        let first = reader(1), second = reader(1)
        await eventually("three readers wait") { buffer.waitingReaders == 3 }
        cancelled.cancel()
        #expect(await cancelled.value == [])
        #expect(buffer.waitingReaders == 2)
        for (row, key) in ["a", "b"].enumerated() {
            f.avenue.prepareItem(for: key, at: row)
            await f.work.waitUntilStarted(key)
            f.work.succeed(key, with: row)
        }
        // Each event went to one reader, in the order they came to wait.
        #expect(await first.value == [0])
        #expect(await second.value == [1])
        // Finished (the avenue went), the subscription ends for every reader waiting.
        let last = reader(1), another = reader(1)
        await eventually("two readers wait again") { buffer.waitingReaders == 2 }
        buffer.finish()
        #expect(await last.value == [])
        #expect(await another.value == [])
    }

    @Test func anIdleSubscriberHoldsAtMostOneEventPerRowTheAvenueStillHas() async {
        let avenue = Avenue<Int, Int, Int>(storage: MemoryStorage(countLimit: 100), processor: ClosureProcessor { $0 })
        let idle = (0..<3).map { _ in avenue.subscribe() }  // subscribed, never read
        let reader = avenue.subscribe()
        var iterator = reader.makeAsyncIterator()
        // A list scrolled through 10,000 rows: each row loads, then is let go.
        for row in 0..<10_000 {
            avenue.prepareItem(for: row, at: row)
            _ = await iterator.next()
            avenue.cancel(at: row)
        }
        for subscription in idle {
            // Before: 10,000 events each. Rows let go are dropped once the buffer reaches 1,024.
            #expect(subscription.subscription.buffer.bufferedCount <= 1_024)
        }
    }

    @Test func theChangesStreamEndsWhenTheAvenueIsReleased() async {
        var avenue: Avenue<Int, String, Int>? = Avenue(storage: MemoryStorage(), processor: ClosureProcessor { _ in 1 })
        let changes = avenue?.subscribe()
        avenue = nil
        var count = 0
        if let changes { for await _ in changes { count += 1 } }
        #expect(count == 0)
    }

    @Test func releasingTheAvenueReleasesItsClaims() async {
        let work = ControlledWork<String, Int>()
        let processor = AutoProcessor(work)
        var avenue: Avenue<Int, String, Int>? = Avenue(storage: MemoryStorage(), processor: processor)
        avenue?.prepareItem(for: "k", at: 0)
        await work.waitUntilStarted("k")
        avenue = nil
        await eventually("the work saw the cancellation") { work.cancellationsSeen(by: "k") == 1 }
        await eventually("the processor is idle") { processor.tableSizes.runs == 0 }
    }
}
