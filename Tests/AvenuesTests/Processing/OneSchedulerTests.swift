import Foundation
import Testing
@testable import Avenues

/// An avenue over a processor that schedules its own work uses it as the one scheduler: the row's
/// priority reaches the download or fetch slot, a raise moves work forward there, a cancel releases
/// the claim there, and the only limit is the one configured there.
@Suite("One scheduler from row to network", .serialized, .timeLimit(.minutes(5)))
final class OneSchedulerTests: Sendable {
    let server: MediaServer
    let folder = TemporaryFolder("one-scheduler")

    init() throws {
        server = try MediaServer()
    }

    enum Stack: String, CaseIterable, CustomTestStringConvertible {
        case media, mapKeys, asyncMapValues, cachedIn
        var testDescription: String { rawValue }
    }

    /// Row 0 holds the only download slot; rows 1–20 are prefetched behind it; row 21 becomes
    /// visible and row 5 is raised to visible. When row 0 lets go, row 21's download runs next, then
    /// row 5's, then the prefetches. `url(row)` is the row's download; `key` the avenue key for it.
    func scenario<Key: Hashable & Sendable, Value: Sendable>(
        _ avenue: Avenue<Int, Key, Value>, media: AsyncMedia, key: (URL) -> Key
    ) async throws {
        func url(_ row: Int) -> URL {
            // Row 0's body never ends: it holds the slot until its row is cancelled.
            row == 0 ? server.url("/endless?pause_ms=20&row=0") : server.url("/bytes/1000?row=\(row)")
        }
        avenue.prepareItem(for: key(url(0)), at: 0, priority: .visible)
        await eventually("row 0's download holds the slot") { (try? await self.server.order().contains { $0.hasSuffix("row=0") }) == true }
        guard media.activity.running == 1 else {
            Issue.record("row 0 is not downloading; activity \(media.activity)")
            avenue.cancelAll()
            return
        }
        for row in 1...20 { avenue.prepareItem(for: key(url(row)), at: row, priority: .prefetch) }
        avenue.prepareItem(for: key(url(21)), at: 21, priority: .visible)
        // One of them is prepared and waits at the gate: its worker may take it after all 21 were
        // claimed (under load), and until then `activity` counts 21 queued too.
        await eventually("21 downloads are queued behind it, one of them prepared") {
            media.activity.queued >= 21 && media.transfersWaitingForASlot == 1
        }
        // Said with what was seen, and ended here: the rest would wait for rows that never run.
        guard media.activity.queued == 21, media.activity.running == 1 else {
            Issue.record("expected row 0 running and 21 queued; activity \(media.activity), server saw \((try? await server.order()) ?? [])")
            avenue.cancelAll()
            return
        }
        avenue.prepareItem(for: key(url(5)), at: 5, priority: .visible)  // scrolled into view
        let told = EventLog<Int>()
        avenue.onStateChange = { told.append($0) }
        avenue.cancel(at: 0)  // scrolled away: its transfer stops and frees the slot
        await eventually("rows 1–21 loaded after row 0 let go of the slot") { Set(told.elements).isSuperset(of: 1...21) }
        guard Set(told.elements).isSuperset(of: 1...21) else {
            Issue.record("row 0's download kept the slot after its row was cancelled; activity \(media.activity)")
            avenue.cancelAll()
            return
        }
        let order = try await server.order().filter { $0.contains("row=") && !$0.hasSuffix("row=0") }
        // Before: the inner queue saw every request at .visible, in arrival order: row 1 came next.
        #expect(order.prefix(2) == ["/bytes/1000?row=21", "/bytes/1000?row=5"], "order \(order)")
        #expect(Set(order.dropFirst(2)) == Set((1...20).filter { $0 != 5 }.map { "/bytes/1000?row=\($0)" }))
        await eventually("the server saw row 0's connection closed") { (try? await self.server.counts().closed["/endless"]) == 1 }
    }

    @Test(arguments: Stack.allCases)
    func aNewlyVisibleRowsDownloadRunsNextPastTwentyQueuedPrefetches(stack: Stack) async throws {
        let media = AsyncMedia(directory: folder.child("media-\(stack)"), maxConcurrentDownloads: 1)
        switch stack {
        case .media:
            try await scenario(Avenue<Int, URL, URL>(storage: MemoryStorage(), processor: media), media: media) { $0 }
        case .mapKeys:
            let processor = media.mapKeys { (path: String) in URL(string: path) ?? URL(fileURLWithPath: "/") }
            try await scenario(Avenue<Int, String, URL>(storage: MemoryStorage(), processor: processor), media: media) { $0.absoluteString }
        case .asyncMapValues:
            let processor = media.asyncMapValues { file in try Data(contentsOf: file).count }
            try await scenario(Avenue<Int, URL, Int>(storage: MemoryStorage(), processor: processor), media: media) { $0 }
        case .cachedIn:
            let processor = media.cached(in: MemoryStorage<URL, URL>())
            try await scenario(Avenue<Int, URL, URL>(storage: MemoryStorage(), processor: processor), media: media) { $0 }
        }
    }

    @Test func aNewlyVisibleRowsFetchRunsNextThroughAMultiplexerMap() async throws {
        let work = ControlledWork<String, Int>()
        let map = MultiplexerMap<String, Int>(maxConcurrentFetches: 1) { key in try await work.process(key) }
        let avenue = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: map)
        avenue.prepareItem(for: "busy", at: 0)
        await work.waitUntilStarted("busy")
        for row in 1...20 { avenue.prepareItem(for: "p\(row)", at: row, priority: .prefetch) }
        avenue.prepareItem(for: "v21", at: 21, priority: .visible)
        await eventually("21 fetches are queued") { map._core.fetcher.activity.queued == 21 }
        avenue.prepareItem(for: "p5", at: 5, priority: .visible)
        work.succeed("busy", with: 0)
        await work.waitUntilStarted("v21")
        work.succeed("v21", with: 21)
        await work.waitUntilStarted("p5")
        #expect(work.startOrder.prefix(3) == ["busy", "v21", "p5"])
        avenue.cancelAll()
    }

    @Test func cancellingTheOnlyRowStopsTheTransfer() async throws {
        let media = AsyncMedia(directory: folder.child("cancel"), maxConcurrentDownloads: 1)
        let avenue = Avenue<Int, URL, URL>(storage: MemoryStorage(), processor: media)
        let url = server.url("/drip/5000000?chunk=4096&pause_ms=10")
        let progress = media.progress(for: url)
        avenue.prepareItem(for: url, at: 0)
        var iterator = progress.makeAsyncIterator()
        _ = await iterator.next()  // the transfer moves (its head came)
        avenue.cancel(at: 0)
        await eventually("the server saw the connection closed") { (try? await self.server.counts().closed["/drip/5000000"]) == 1 }
        await eventually("nothing is queued or running") { media.downloaderIsIdle && avenue.processor.tableSizes.isIdle }
    }

    @Test func aProcessorWrappingASchedulerTellsItThePriorityOfEachJobAndItsRaises() async throws {
        let inner = ControlledWork<String, Int>()
        let scheduler = AutoProcessor(maxConcurrent: 1, inner)
        let outer = AutoProcessor(maxConcurrent: 4, scheduler.mapValues { $0 * 10 })  // a scheduling chain
        #expect(outer._propagatesPriority)
        let busy = Task { try await scheduler.value(for: "busy") }
        await inner.waitUntilStarted("busy")
        let prefetched = outer.claim("later", priority: .prefetch) { _ in }
        let visible = outer.claim("now", priority: .visible) { _ in }
        await eventually("both are queued in the inner scheduler") { scheduler.activity.queued == 2 }
        outer.setPriority(.visible, for: prefetched)  // "later" is raised through the outer run
        inner.succeed("busy", with: 0)
        _ = try await busy.value
        await inner.waitUntilStarted("now")
        inner.succeed("now", with: 1)
        await inner.waitUntilStarted("later")
        #expect(inner.startOrder == ["busy", "now", "later"])
        inner.succeed("later", with: 2)
        outer.release(visible)
        outer.release(prefetched)
    }

    /// A scheduling processor written by a user: the avenue asks it with each row's priority, and
    /// tells it when a row scrolled into view raised that priority.
    @Test func anAvenueAsksAUsersSchedulingProcessorAtEachRowsPriorityAndItsRaises() async throws {
        let recorder = PriorityRecorder()
        let avenue = Avenue<Int, String, Int>(storage: MemoryStorage(), processor: recorder)
        avenue.prepareItem(for: "far", at: 40, priority: .prefetch)
        await eventually("the prefetch is asked at .prefetch") { recorder.seen["far"] == [.prefetch] }
        avenue.prepareItem(for: "far", at: 40, priority: .visible)  // scrolled into view
        await eventually("the raise reaches the processor") { recorder.seen["far"] == [.prefetch, .visible] }
        avenue.prepareItem(for: "near", at: 0, priority: .visible)
        await eventually("a visible row is asked at .visible") { recorder.seen["near"] == [.visible] }
        #expect(recorder.plainCalls == 0)  // never asked without its priority
        avenue.cancelAll()
        await eventually("the runs ended") { avenue.processor.tableSizes.isIdle }
    }
}

/// A ``SchedulingProcessor`` of a user's own that records the priorities it is asked at and their
/// changes, and never finishes a value (the test cancels).
final class PriorityRecorder: SchedulingProcessor {
    private let state = Shared(([String: [LoadPriority]](), 0))

    var seen: [String: [LoadPriority]] { state.value.0 }
    var plainCalls: Int { state.value.1 }

    func process(_ key: String) async throws -> Int {
        state.withLock { $0.1 += 1 }
        return try await process(key, priority: RunPriority(.visible))
    }

    func process(_ key: String, priority: RunPriority) async throws -> Int {
        let observation = priority.observe { [state] changed in state.withLock { $0.0[key, default: []].append(changed) } }
        defer { priority.stopObserving(observation) }
        state.withLock { $0.0[key, default: []].append(priority.value) }
        try await Task.sleep(for: .seconds(3_600))  // until cancelled
        return key.count
    }
}

@Suite("RunPriority")
struct RunPriorityTests {
    @Test func observersHearEachChangeOnceUntilTheyStop() {
        let run = RunPriority(.prefetch)
        let heard = Shared([LoadPriority]())
        let observation = run.observe { priority in heard.withLock { $0.append(priority) } }
        run.update(.prefetch)  // no change: nobody is told
        run.update(.visible)
        run.update(.background)
        #expect(run.value == .background)
        run.stopObserving(observation)
        run.update(.visible)
        #expect(heard.value == [.visible, .background])
        #expect(run.value == .visible)
    }
}

/// Holds the first call it gets, on whichever thread made it, until ``letGo()``; later calls pass.
final class FirstCallHold: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)
    private let first = Shared(true)

    func call() {
        guard first.withLock({ isFirst in defer { isFirst = false }; return isFirst }) else { return }
        entered.signal()
        released.wait()
    }

    /// Returns once the first call is held.
    func held() async { await onOwnThread { self.entered.wait() } }

    func letGo() { released.signal() }
}

@Suite("RunPriority races", .timeLimit(.minutes(5)))
struct RunPriorityRaceTests {
    /// Two updates on two threads: the first is held inside its observer while the second is made.
    /// Before, the second was told at once and the first after it, so the observer ended on the
    /// older priority while `value` said the newer.
    @Test func updatesRacingOnTwoThreadsLeaveTheObserversOnTheLastOne() async {
        let run = RunPriority(.prefetch)
        let hold = FirstCallHold()
        let heard = Shared([LoadPriority]())
        let observation = run.observe { priority in
            hold.call()
            heard.withLock { $0.append(priority) }
        }
        defer { run.stopObserving(observation) }
        let first = Task { await onOwnThread { run.update(.visible) } }
        await hold.held()
        await onOwnThread { run.update(.background) }
        hold.letGo()
        await first.value
        #expect(run.value == .background)
        #expect(heard.value == [.visible, .background])
    }

    /// An observer that updates the priority it is told (a scheduler that clamps it) is told the
    /// new priority after it returns, on the same thread, not from inside itself.
    @Test func anObserverThatUpdatesThePriorityIsToldItAfterItReturns() {
        let run = RunPriority(.prefetch)
        let heard = Shared([LoadPriority]())
        let inside = Shared(false), calledFromInside = Shared(false)
        let observation = run.observe { priority in
            if inside.withLock({ inside in defer { inside = true }; return inside }) { calledFromInside.withLock { $0 = true } }
            heard.withLock { $0.append(priority) }
            if priority == .visible { run.update(.background) }
            inside.withLock { $0 = false }
        }
        defer { run.stopObserving(observation) }
        run.update(.visible)
        #expect(heard.value == [.visible, .background])
        #expect(!calledFromInside.value)
        #expect(run.value == .background)
    }

    /// Seen 2026-11-29 in CI (ThreadSanitizer): a download withdrawn after its run's last look at
    /// cancellation, and before its wait for a slot, got the slot and sent its request. The run's
    /// `RunPriority` says it is withdrawn before its task is cancelled — released, or cancelled by
    /// key or all at once — so a transfer's start, on the transport's thread, sees it first.
    @Test(arguments: ["release", "cancel(for:)", "cancelAll"])
    func aReleasedRunIsWithdrawnBeforeItsTaskIsCancelled(by way: String) async {
        let run = Shared<RunPriority?>(nil)
        let withdrawnWhenCancelled = Shared<Bool?>(nil)
        let processor = AutoProcessor<String, Int>(
            maxConcurrent: 1, reservedForVisible: 0, rateLimit: nil, executor: nil, propagatesPriority: true,
            work: { _, context in
                run.withLock { $0 = context }
                await withTaskCancellationHandler {
                    try? await Task.sleep(for: .seconds(3_600))  // until its claim is released
                } onCancel: {
                    withdrawnWhenCancelled.withLock { $0 = context?.isWithdrawn }
                }
                return 1
            }
        )
        let claim = processor.claim("row") { _ in }
        await eventually("the work runs") { run.value != nil }
        #expect(run.value?.isWithdrawn == false)
        switch way {
        case "release": processor.release(claim)
        case "cancel(for:)": processor.cancel(for: "row")
        default: processor.cancelAll()
        }
        #expect(withdrawnWhenCancelled.value == true)
        await eventually("the run ended") { processor.tableSizes.isIdle }
    }

    /// The same race one level up: two claims' priority changes on two threads reach the running
    /// work's `RunPriority`. Before, each carried the priority computed under the processor's lock
    /// and the older could be told last; now the priority told is read from the processor then.
    @Test func priorityChangesRacingOnTwoThreadsLeaveTheRunningWorkOnTheLastOne() async {
        let hold = FirstCallHold()
        let heard = Shared([LoadPriority]())
        let observing = Shared(false)
        let processor = AutoProcessor<String, Int>(
            maxConcurrent: 1, reservedForVisible: 0, rateLimit: nil, executor: nil, propagatesPriority: true,
            work: { _, run in
                guard let run else { return 0 }
                let observation = run.observe { priority in
                    hold.call()
                    heard.withLock { $0.append(priority) }
                }
                defer { run.stopObserving(observation) }
                observing.withLock { $0 = true }
                try await Task.sleep(for: .seconds(3_600))  // until its claim is released
                return 1
            }
        )
        let claim = processor.claim("row", priority: .prefetch) { _ in }
        await eventually("the work observes its priority") { observing.value }
        let first = Task { await onOwnThread { processor.setPriority(.visible, for: claim) } }
        await hold.held()
        await onOwnThread { processor.setPriority(.prefetch, for: claim) }
        hold.letGo()
        await first.value
        #expect(heard.value == [.visible, .prefetch])
        processor.release(claim)
        await eventually("the run ended") { processor.tableSizes.isIdle }
    }
}
