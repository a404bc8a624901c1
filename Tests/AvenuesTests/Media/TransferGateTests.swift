import Foundation
import Synchronization
import Testing
@testable import Avenues
import AvenuesTestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// AsyncMedia prepares up to `maxConcurrentDownloads` more transfers than it moves; they wait at a
/// ``TransferGate`` and the thread of a transfer that ends starts the next. Only
/// `maxConcurrentDownloads` move at once, the order stays the scheduler's (priority, then arrival),
/// waiting counts against no time limit, and a waiting download cancelled gives back its file.
@Suite("Transfer gate", .timeLimit(.minutes(5)))
struct TransferGateTests {
    // MARK: The gate alone

    /// Starts recorded in order, for a gate driven by hand.
    final class Starts: Sendable {
        let order = Locked<[UInt64]>([])
        func start(_ ticket: UInt64) -> @Sendable () -> Void {
            { self.order.withLock { $0.append(ticket) } }
        }
        var value: [UInt64] { order.withLock { $0 } }
    }

    /// Seen 2026-11-29 in CI (ThreadSanitizer): a list left after its first answer withdrew its
    /// claims from the last; the one moving came late in the list (they move in the order they were
    /// ready), so its slot went to one waiting early in it, which started a request nobody wanted.
    /// While a withdrawal holds the gate no slot is handed on; after it, a transfer still waiting
    /// (another caller's) gets the slot.
    @Test func aSlotFreedWhileTheGateIsHeldGoesToNoTransferWithdrawnMeanwhile() {
        let gate = TransferGate(limit: 1)
        let starts = Starts()
        let (moving, withdrawn, other) = (gate.ticket(), gate.ticket(), gate.ticket())
        gate.enter(moving, priority: RunPriority(.visible), start: starts.start(moving))
        gate.enter(withdrawn, priority: RunPriority(.visible), start: starts.start(withdrawn))
        gate.enter(other, priority: RunPriority(.visible), start: starts.start(other))
        gate.holding {
            #expect(gate.leave(moving) == false)  // moving: its slot is freed, and kept
            #expect(starts.value == [moving] && gate.movingCount == 0)
            #expect(gate.leave(withdrawn) == true)  // waiting: it never started
        }
        #expect(starts.value == [moving, other] && gate.movingCount == 1 && gate.waitingCount == 0)
        // Nested holds hand the slot on when the outer one ends.
        let last = gate.ticket()
        gate.enter(last, priority: RunPriority(.visible), start: starts.start(last))
        gate.holding {
            gate.holding { gate.leave(other) }
            #expect(starts.value == [moving, other])
        }
        #expect(starts.value == [moving, other, last])
    }

    @Test func aFreedSlotIsKeptForHigherQueuedWorkUntilItEntersOrAWorkerRetires() {
        let gate = TransferGate(limit: 1)
        let queued = Locked<LoadPriority?>(nil)
        gate.readQueuedPriority { queued.withLock { $0 } }
        let starts = Starts()
        let first = gate.ticket(), prefetch = gate.ticket()
        gate.enter(first, priority: RunPriority(.visible), start: starts.start(first))
        gate.enter(prefetch, priority: RunPriority(.prefetch), start: starts.start(prefetch))
        #expect(starts.value == [first])
        // Visible work is queued in the scheduler: the slot waits for it.
        queued.withLock { $0 = .visible }
        #expect(gate.leave(first) == false)
        #expect(starts.value == [first] && gate.movingCount == 0 && gate.waitingCount == 1)
        // That work was cancelled before a worker took it; the worker found nothing and retired.
        queued.withLock { $0 = nil }
        gate.workerRetired()
        #expect(starts.value == [first, prefetch] && gate.movingCount == 1)
        #expect(gate.leave(prefetch) == false)
        #expect(gate.movingCount == 0)
    }

    /// A transport may end the transfer just started before the fill that started it is over (on
    /// its own thread, or inside `start`). That slot is kept for higher queued work as its leave
    /// asks: before, the entering fill went on and gave it to the prefetch waiting here, ahead of
    /// the visible row the freeing run was about to prepare (`OneSchedulerTests` under load).
    @Test func aSlotFreedWhileAnEnteringFillRunsIsKeptForHigherQueuedWork() {
        let gate = TransferGate(limit: 1)
        let queued = Locked<LoadPriority?>(nil)
        gate.readQueuedPriority { queued.withLock { $0 } }
        let starts = Starts()
        let (first, prefetch, visible) = (gate.ticket(), gate.ticket(), gate.ticket())
        gate.enter(first, priority: RunPriority(.visible), start: starts.start(first))
        gate.enter(prefetch, priority: RunPriority(.prefetch), start: starts.start(prefetch))
        queued.withLock { $0 = .visible }  // two visible rows wait in the scheduler
        gate.leave(first)
        #expect(starts.value == [first] && gate.waitingCount == 1)
        // One of them is prepared and enters; its transport ends it as it starts.
        gate.enter(visible, priority: RunPriority(.visible)) {
            starts.start(visible)()
            gate.leave(visible)
        }
        #expect(starts.value == [first, visible], "the slot went to the prefetch ahead of the other visible row")
        #expect(gate.movingCount == 0 && gate.waitingCount == 1)
        // That row was cancelled before a worker took it: the prefetch moves.
        queued.withLock { $0 = nil }
        gate.workerRetired()
        #expect(starts.value == [first, visible, prefetch] && gate.movingCount == 1)
    }

    /// A transfer leaves while another thread's fill is under way, and its run, resumed as the leave
    /// returns, takes the visible work queued behind (so the scheduler's queue no longer shows it)
    /// before that fill looks. The slot is still kept for it: the leave read what was queued before
    /// its run could move on. Before, the fill gave the slot to the prefetch waiting here.
    @Test func aSlotFreedWhileAnotherThreadFillsIsKeptForTheWorkQueuedWhenItWasFreed() {
        let gate = TransferGate(limit: 2)
        let queued = Locked<LoadPriority?>(nil)
        gate.readQueuedPriority { queued.withLock { $0 } }
        let starts = Starts()
        let (x, z, prefetch, entering, visible) = (gate.ticket(), gate.ticket(), gate.ticket(), gate.ticket(), gate.ticket())
        gate.enter(x, priority: RunPriority(.visible), start: starts.start(x))
        gate.enter(z, priority: RunPriority(.visible), start: starts.start(z))
        gate.enter(prefetch, priority: RunPriority(.prefetch), start: starts.start(prefetch))
        queued.withLock { $0 = .visible }  // a visible row waits in the scheduler
        gate.leave(z)  // kept for it
        #expect(starts.value == [x, z] && gate.waitingCount == 1)
        // Another visible download enters and takes that slot; while its fill runs (inside its
        // start), x's transport ends x, and x's run takes the queued row: only prefetches are queued.
        gate.enter(entering, priority: RunPriority(.visible)) {
            starts.start(entering)()
            gate.leave(x)
            queued.withLock { $0 = .prefetch }
        }
        #expect(starts.value == [x, z, entering], "x's slot went to the prefetch ahead of the visible row x's run took")
        gate.enter(visible, priority: RunPriority(.visible), start: starts.start(visible))
        #expect(starts.value == [x, z, entering, visible])
        #expect(gate.movingCount == 2 && gate.waitingCount == 1)
    }

    /// Four threads enter transfers at random priorities, end them (some inside their start, as a
    /// transport that fails at once does) and change what the scheduler has queued, all at once. No
    /// more than `limit` ever move, and once the queued work is gone and a worker retires, every
    /// transfer has moved and the slots are whole: no slot is lost or taken twice in a race.
    @Test(arguments: [1, 2, 3])
    func enteringAndLeavingOnFourThreadsAtOnceLosesNoSlot(limit: Int) {
        let gate = TransferGate(limit: limit)
        let queued = Locked<LoadPriority?>(nil)
        gate.readQueuedPriority { queued.withLock { $0 } }
        let movingNow = Atomic<Int>(0), peak = Atomic<Int>(0), started = Atomic<Int>(0)
        let threads = 4, perThread = 400
        /// Tickets that moved and are not over yet: each thread ends its own later.
        let moving = Locked<[Int: [UInt64]]>([:])
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var random = SplitMix64(seed: UInt64(thread) &+ 11)
            for step in 0..<perThread {
                let ticket = gate.ticket()
                let endsAtStart = Int.random(in: 0..<5, using: &random) == 0
                let priority = RunPriority(LoadPriority.allCases.randomElement(using: &random) ?? .visible)
                gate.enter(ticket, priority: priority) {
                    started.add(1, ordering: .relaxed)
                    let now = movingNow.add(1, ordering: .relaxed).newValue
                    peak.max(now, ordering: .relaxed)
                    if endsAtStart {
                        movingNow.subtract(1, ordering: .relaxed)
                        gate.leave(ticket)
                    } else {
                        moving.withLock { $0[thread, default: []].append(ticket) }
                    }
                }
                if step % 7 == 0 {
                    queued.withLock { $0 = Bool.random(using: &random) ? nil : LoadPriority.allCases.randomElement(using: &random) }
                }
                if step % 3 == 0, let mine = moving.withLock({ $0[thread]?.popLast() }) {
                    movingNow.subtract(1, ordering: .relaxed)
                    gate.leave(mine)
                }
                if step % 11 == 0 { gate.workerRetired() }
            }
        }
        // The queued work is gone: the scheduler's workers retire, and the rest move as slots free.
        queued.withLock { $0 = nil }
        gate.workerRetired()
        while true {
            let next = moving.withLock { all -> UInt64? in
                for thread in all.keys.sorted() { if let ticket = all[thread]?.popLast() { return ticket } }
                return nil
            }
            guard let next else { break }
            movingNow.subtract(1, ordering: .relaxed)
            gate.leave(next)
        }
        #expect(started.load(ordering: .relaxed) == threads * perThread)
        #expect(peak.load(ordering: .relaxed) <= limit)
        #expect(gate.movingCount == 0 && gate.waitingCount == 0)
    }

    @Test func aTransferLeavingWhileItWaitsGivesUpItsPlaceNotASlot() {
        let gate = TransferGate(limit: 1)
        let starts = Starts()
        let (a, b, c) = (gate.ticket(), gate.ticket(), gate.ticket())
        for ticket in [a, b, c] { gate.enter(ticket, priority: nil, start: starts.start(ticket)) }
        #expect(gate.leave(b) == true)  // still waiting: never started
        #expect(gate.movingCount == 1 && gate.waitingCount == 1)
        gate.leave(a)
        #expect(starts.value == [a, c])
    }

    /// A transport that ends a transfer inside its start (one that fails at once) frees the slot
    /// from inside the gate's fill: the next waiting transfer is started by that fill's loop, not by
    /// a fill one level deeper for each (a thousand waiting transfers were a thousand nested starts).
    @Test func transfersEndingAsTheyStartHandTheSlotOnWithoutRecursing() {
        let gate = TransferGate(limit: 1)
        let started = Atomic<Int>(0)
        let depth = Atomic<Int>(0), deepest = Atomic<Int>(0)
        let first = gate.ticket()
        gate.enter(first, priority: nil) {}
        let count = 1_000
        for _ in 0..<count {
            let ticket = gate.ticket()
            gate.enter(ticket, priority: nil) {
                let now = depth.add(1, ordering: .relaxed).newValue
                deepest.max(now, ordering: .relaxed)
                started.add(1, ordering: .relaxed)
                gate.leave(ticket)
                depth.subtract(1, ordering: .relaxed)
            }
        }
        #expect(gate.waitingCount == count)
        gate.leave(first)
        #expect(started.load(ordering: .relaxed) == count)
        #expect(deepest.load(ordering: .relaxed) == 1)
        #expect(gate.movingCount == 0 && gate.waitingCount == 0)
    }

    /// Random enters, leaves, priority changes, queued work and retirements against a model: a slot
    /// is never over-used, a free slot with transfers waiting exists only while it is kept for
    /// higher queued work, and each start is the highest-priority waiting transfer, the earliest
    /// among equals.
    @Test(arguments: 0..<20)
    func randomEventsMatchTheModel(seed: Int) {
        var random = SplitMix64(seed: UInt64(seed) &+ 71)
        let limit = Int.random(in: 1...3, using: &random)
        let gate = TransferGate(limit: limit)
        let queued = Locked<LoadPriority?>(nil)
        gate.readQueuedPriority { queued.withLock { $0 } }
        let starts = Starts()
        var priorities: [UInt64: RunPriority] = [:]
        var waiting: [UInt64] = []  // the model: in entry order
        var moving: Set<UInt64> = []
        var started: Set<UInt64> = []
        var endingAtStart: Set<UInt64> = []  // their transport ends them inside `start`
        var keptForQueued = false
        /// The highest priority queued when a slot was given back with a transfer waiting below
        /// `.visible`, since the last enter or retirement.
        var keptFor: LoadPriority?
        func slotGivenBack() {
            guard waiting.contains(where: { (priorities[$0]?.value ?? .visible) < .visible }), let now = queued.withLock({ $0 }) else { return }
            keptFor = max(keptFor ?? now, now)
        }
        func expectedNext() -> UInt64? {
            waiting.max { lhs, rhs in
                let (l, r) = (priorities[lhs]?.value ?? .visible, priorities[rhs]?.value ?? .visible)
                return l != r ? l < r : lhs > rhs  // equal: the earlier (smaller ticket) is the larger
            }
        }
        /// Starts the model's waiting transfers while slots are free, as the gate must.
        func modelFill(keeping: Bool) {
            var keeping = keeping
            while moving.count < limit, let next = expectedNext() {
                let wanted = [queued.withLock({ $0 }), keptFor].compactMap { $0 }.max()
                if keeping, let wanted, wanted > (priorities[next]?.value ?? .visible) {
                    keptForQueued = true
                    return
                }
                waiting.removeAll { $0 == next }
                started.insert(next)
                if endingAtStart.contains(next) {
                    slotGivenBack()
                    keeping = true  // the slot it gives back is kept as its leave asks
                } else {
                    moving.insert(next)
                }
            }
            keptForQueued = false
        }
        for step in 0..<300 {
            let before = starts.value.count
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<4:
                let ticket = gate.ticket()
                let priority = RunPriority(LoadPriority.allCases.randomElement(using: &random) ?? .visible)
                priorities[ticket] = priority
                waiting.append(ticket)
                if Int.random(in: 0..<4, using: &random) == 0 {
                    endingAtStart.insert(ticket)
                    let record = starts.start(ticket)
                    gate.enter(ticket, priority: priority) {
                        record()
                        gate.leave(ticket)
                    }
                } else {
                    gate.enter(ticket, priority: priority, start: starts.start(ticket))
                }
                keptFor = nil
                modelFill(keeping: false)
            case 4..<7:
                guard let ticket = (moving.sorted() + waiting).randomElement(using: &random) else { continue }
                let wasWaiting = waiting.contains(ticket)
                #expect(gate.leave(ticket) == wasWaiting, "step \(step)")
                if wasWaiting { waiting.removeAll { $0 == ticket } } else {
                    moving.remove(ticket)
                    slotGivenBack()
                    modelFill(keeping: true)
                }
            case 7:
                guard let ticket = waiting.randomElement(using: &random) else { continue }
                priorities[ticket]?.update(LoadPriority.allCases.randomElement(using: &random) ?? .visible)
            case 8:
                queued.withLock { $0 = Bool.random(using: &random) ? nil : LoadPriority.allCases.randomElement(using: &random) }
            default:
                gate.workerRetired()
                keptFor = nil
                modelFill(keeping: false)
            }
            #expect(Set(starts.value) == started, "step \(step): started \(Array(starts.value.dropFirst(before)))")
            #expect(gate.movingCount == moving.count && gate.waitingCount == waiting.count, "step \(step)")
            #expect(moving.count <= limit)
            if moving.count < limit && !waiting.isEmpty { #expect(keptForQueued, "step \(step): a free slot left idle") }
        }
    }

    // MARK: Through AsyncMedia

    @Test func atMostMaxConcurrentDownloadsMoveAndTheRestWaitPrepared() async throws {
        let folder = TemporaryFolder("gate-limit")
        let transport = HeldTransport()
        let media = AsyncMedia(directory: folder.url, maxConcurrentDownloads: 2, transport: transport)
        let paths = (0..<8).map { "/f\($0)" }
        let downloads = paths.map { path in Task { try await media.file(for: HeldTransport.url(path)) } }
        // Two move; two more are prepared and wait at the gate (queued, to `activity`); four wait
        // for a worker.
        await eventually("two move, six are queued") { transport.started.count == 2 && media.activity == AutoProcessorActivity(queued: 6, running: 2) }
        #expect(transport.started.count == 2)
        var finished = 0
        while finished < paths.count {
            await eventually("a transfer is moving") { transport.started.count > finished }
            transport.finish(transport.started[finished])
            finished += 1
        }
        for (path, download) in zip(paths, downloads) {
            #expect(try Data(contentsOf: try await download.value) == HeldTransport.body(path))
        }
        #expect(transport.peak == 2)
        #expect(Set(transport.started) == Set(paths))
    }

    /// Before the gate kept a slot for queued work, the prefetch prepared first moved before the
    /// visible download queued behind it.
    @Test func aVisibleDownloadQueuedBehindAPreparedPrefetchMovesFirst() async throws {
        let line = await PrefetchBehindVisible("gate-order")
        try await line.finishAllInTheOrderTheyMove()
        #expect(line.transport.started == ["/a", "/c", "/b"])
        for task in [line.a, line.b, line.c] { _ = try await task.value }
    }

    /// One slot: `/a` moves (visible), `/b` is a prefetch prepared and waiting at the gate, `/c` is
    /// a visible download queued behind it in the scheduler.
    struct PrefetchBehindVisible {
        let folder: TemporaryFolder
        let transport = HeldTransport()
        let media: AsyncMedia
        let a, b, c: Task<URL, any Error>

        init(_ name: String) async {
            folder = TemporaryFolder(name)
            let (transport, media) = (transport, AsyncMedia(directory: folder.url, maxConcurrentDownloads: 1, transport: transport))
            self.media = media
            a = Task { try await media.file(for: HeldTransport.url("/a"), priority: RunPriority(.visible)) }
            await eventually("a moves") { transport.started == ["/a"] }
            b = Task { try await media.file(for: HeldTransport.url("/b"), priority: RunPriority(.prefetch)) }
            // Prepared, not only claimed: `activity` counts a download waiting for a worker as queued too.
            await eventually("b is prepared and waits") { media.transfersWaitingForASlot == 1 }
            c = Task { try await media.file(for: HeldTransport.url("/c"), priority: RunPriority(.visible)) }
            await eventually("c is queued") { media.activity == AutoProcessorActivity(queued: 2, running: 1) }
        }

        /// Ends `/a`, then each of the other two as it moves.
        func finishAllInTheOrderTheyMove() async throws {
            transport.finish("/a")
            await eventually("the next moves") { transport.started.count == 2 }
            // #require, not [i]: a wait that timed out fails the test instead of crashing the run.
            transport.finish(try #require(transport.started.dropFirst(1).first))
            await eventually("the last moves") { transport.started.count == 3 }
            transport.finish(try #require(transport.started.dropFirst(2).first))
        }
    }

    /// 150 downloads claimed at random priorities, a tenth of them cancelled and a tenth raised or
    /// lowered while others end: whatever slots were kept for queued work, every download settles
    /// (none waits behind a slot nobody takes), each one not cancelled gets its own bytes, no more
    /// than the limit ever move, and nothing is left queued or running.
    @Test(arguments: [1, 2, 3])
    func downloadsAtMixedPrioritiesCancelledAndRaisedAtRandomAllSettle(limit: Int) async throws {
        let folder = TemporaryFolder("gate-random-\(limit)")
        let transport = HeldTransport()
        let media = AsyncMedia(directory: folder.url, maxConcurrentDownloads: limit, transport: transport)
        var random = SplitMix64(seed: UInt64(limit) &+ 91)
        let count = 150
        let settled = Shared(0)
        var downloads: [(path: String, task: Task<URL, any Error>, priority: RunPriority)] = []
        var cancelled: Set<Int> = []
        for index in 0..<count {
            let path = "/mixed/\(index)"
            let priority = RunPriority(LoadPriority.allCases.randomElement(using: &random) ?? .visible)
            let task = Task {
                defer { settled.withLock { $0 += 1 } }
                return try await media.file(for: HeldTransport.url(path), priority: priority)
            }
            downloads.append((path, task, priority))
            switch Int.random(in: 0..<10, using: &random) {
            case 0:
                let victim = Int.random(in: 0...index, using: &random)
                downloads[victim].task.cancel()
                cancelled.insert(victim)
            case 1:
                downloads[Int.random(in: 0...index, using: &random)].priority.update(LoadPriority.allCases.randomElement(using: &random) ?? .visible)
            case 2..<5:
                if let path = transport.held.first { transport.finish(path) }
            default:
                break
            }
            if index % 10 == 0 { await Task.yield() }
        }
        // Whatever moves is ended, until every download has settled: a slot kept for work that
        // never comes would leave downloads waiting with nothing held, and time this wait out.
        while settled.value < count {
            await eventually("a transfer moves, or every download settled", deadline: .seconds(60)) {
                settled.value == count || !transport.held.isEmpty
            }
            guard settled.value < count else { break }
            if transport.held.isEmpty {
                Issue.record("\(count - settled.value) downloads wait with nothing moving; activity \(media.activity)")
                for download in downloads { download.task.cancel() }
                return
            }
            for path in transport.held { transport.finish(path) }
        }
        for (index, download) in downloads.enumerated() {
            switch await download.task.result {
            case .success(let file):
                #expect(try Data(contentsOf: file) == HeldTransport.body(download.path))
            case .failure(let error):
                #expect(cancelled.contains(index) && error is CancellationError, "\(download.path): \(error)")
            }
        }
        #expect(transport.peak <= limit)
        await eventually("nothing is queued or running") { media.activity == AutoProcessorActivity(queued: 0, running: 0) }
    }

    /// The visible download queued behind a prepared prefetch is cancelled, before the slot frees or
    /// as it frees: whichever way the two fall (the slot kept for it and then given up when its
    /// worker finds nothing and retires, or never kept, or taken by it and freed by its cancel), the
    /// prefetch moves. The retirement itself is pinned down without threads in
    /// `aFreedSlotIsKeptForHigherQueuedWorkUntilItEntersOrAWorkerRetires`.
    @Test(arguments: [false, true])
    func aSlotKeptForAVisibleDownloadThatIsCancelledGoesToThePrefetchWaiting(cancelFirst: Bool) async throws {
        let line = await PrefetchBehindVisible("gate-kept-cancelled-\(cancelFirst)")
        let (transport, media, a, b, c) = (line.transport, line.media, line.a, line.b, line.c)
        if cancelFirst {
            c.cancel()
            await eventually("c is withdrawn") { media.activity == AutoProcessorActivity(queued: 1, running: 1) }
            transport.finish("/a")
        } else {
            transport.finish("/a")
            c.cancel()
        }
        await eventually("b moves") { transport.started.contains("/b") }
        transport.finish("/b")
        _ = try await a.value
        _ = try await b.value
        #expect((try? await c.value) == nil)
        #expect(!transport.started.contains("/c") || !cancelFirst)
        await eventually("nothing is queued or running") { media.activity == AutoProcessorActivity(queued: 0, running: 0) }
    }

    /// A prefetch prepared and waiting at the gate is asked for again at `.visible` by another
    /// caller (a row that scrolled into view in a second list): the one download is now visible
    /// and, having entered first, moves before the visible download queued after it.
    @Test func aPreparedPrefetchAskedForAgainAtVisibleMovesAsVisible() async throws {
        let line = await PrefetchBehindVisible("gate-joined")
        let media = line.media
        let bAgain = Task { try await media.file(for: HeldTransport.url("/b"), priority: RunPriority(.visible)) }
        await eventually("b is claimed twice") { media.activity == AutoProcessorActivity(queued: 2, running: 1) && media.downloadClaims == 4 }
        try await line.finishAllInTheOrderTheyMove()
        #expect(line.transport.started == ["/a", "/b", "/c"])
        for task in [line.a, line.b, line.c, bAgain] { _ = try await task.value }
    }

    @Test func aDownloadCancelledWhileItWaitsClosesItsFileAndLeavesTheSlotsWhole() async throws {
        let folder = TemporaryFolder("gate-cancel")
        let transport = HeldTransport()
        let media = AsyncMedia(directory: folder.url, maxConcurrentDownloads: 1, transport: transport)
        let a = Task { try await media.file(for: HeldTransport.url("/a")) }
        await eventually("a moves") { transport.started == ["/a"] }
        let b = Task { try await media.file(for: HeldTransport.url("/b")) }
        await eventually("b waits") { media.activity == AutoProcessorActivity(queued: 1, running: 1) }
        // a's file and b's (named or not) are open; b's closes when it is cancelled.
        // (Read through /proc, which other tests' opens and closes can make miss one: asked again.)
        await eventually("a's and b's files are open") { openDescriptors(in: folder.path).map { $0 == 2 } ?? true }
        b.cancel()
        await #expect(throws: CancellationError.self) { try await b.value }
        await eventually("b's file is closed") { openDescriptorsSettled(in: folder.path, at: 1) }
        transport.finish("/a")
        _ = try await a.value
        // The slot b never took is not lost: the next download moves at once.
        let c = Task { try await media.file(for: HeldTransport.url("/c")) }
        await eventually("c moves") { transport.started == ["/a", "/c"] }
        transport.finish("/c")
        _ = try await c.value
        #expect(transport.peak == 1)
    }

    /// A transport of a user's that calls its sinks under its own lock, which `start` takes too: the
    /// end of one transfer must not start the next on that thread (it would wait for itself).
    @Test func aUsersTransportThatCallsSinksUnderItsLockIsNotReenteredFromThem() async throws {
        let folder = TemporaryFolder("gate-foreign")
        let media = AsyncMedia(directory: folder.url, maxConcurrentDownloads: 1, transport: SelfLockingTransport())
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<6 {
                group.addTask {
                    let file = try await media.file(for: HeldTransport.url("/locked/\(index)"))
                    #expect(try Data(contentsOf: file) == SelfLockingTransport.body)
                }
            }
            try await group.waitForAll()
        }
    }

    /// Twice `Int.max` runs would overflow: the scheduler gets `Int.max`, the gate `Int.max` slots.
    @Test func anUnboundedNumberOfDownloadsStillDownloads() async throws {
        let folder = TemporaryFolder("gate-unbounded")
        let transport = HeldTransport()
        let media = AsyncMedia(directory: folder.url, maxConcurrentDownloads: .max, transport: transport)
        let downloads = (0..<3).map { index in Task { try await media.file(for: HeldTransport.url("/u\(index)")) } }
        await eventually("all three move") { transport.started.count == 3 }
        for path in transport.started { transport.finish(path) }
        for download in downloads { _ = try await download.value }
        #expect(transport.peak == 3)
    }

    @Test func waitingForASlotCountsAgainstNoTimeLimit() throws {
        let folder = TemporaryFolder("gate-limits")
        let path = folder.path + "/file"
        let descriptor = try FileSystem.createExclusive(path, mode: 0o600)
        let gate = TransferGate(limit: 1)
        let busy = gate.ticket()
        gate.enter(busy, priority: nil) {}
        let limits = DownloadLimits(idleTimeout: .seconds(1), totalTimeout: .seconds(2))
        let ticket = gate.ticket()
        let transfer = Transfer(
            request: .init(url: HeldTransport.url("/slow"), conditional: false, transportDecodes: false),
            file: Transfer.FileTarget(path: path, descriptor: SharedDescriptor(descriptor), existing: 0),
            limits: limits, writeBytes: { _, _, _ in }, report: { _ in }, slot: (gate, ticket)
        )
        gate.enter(ticket, priority: nil) { transfer.moved() }
        // An hour in line: nothing failed, and it is looked at again an idle timeout later.
        let later = ContinuousClock.now + .seconds(3_600)
        #expect(transfer.checkLimits(now: later) == later + .seconds(1))
        let before = ContinuousClock.now
        gate.leave(busy)  // its slot goes to the transfer: the limits count from now
        let after = ContinuousClock.now
        #expect(transfer.checkLimits(now: before).map { $0 > before && $0 <= after + .seconds(1) } == true)
        // A second with no byte fails it, and its slot is given back.
        #expect(transfer.checkLimits(now: after + .seconds(5)) == nil)
        #expect(gate.movingCount == 0)
        transfer.end(CancellationError())  // as its transport would: the file is closed
    }

    /// `activity.running` is the downloads moving bytes: never more than `maxConcurrentDownloads`.
    /// It was the scheduler's running count less those waiting at the gate, so a download being
    /// prepared (claimed by a worker, its file opened, not yet at the gate) counted as running, and
    /// a read between the two locks could count one twice: 3 or 4 running with a limit of 2.
    @Test func activityNeverCountsMoreRunningThanTheLimit() async throws {
        let folder = TemporaryFolder("activity-limit")
        let media = AsyncMedia(directory: folder.url, maxConcurrentDownloads: 2, transport: CountingTransport())
        let list = (0..<100).map { HeldTransport.url("/activity\($0)") }
        let answered = Locked(0)
        let sampling = Locked(true)
        let observed = Locked((peak: 0, samples: 0, total: 0))
        @Sendable func sample() {
            let activity = media.activity
            observed.withLock { observed in
                observed.peak = max(observed.peak, activity.running)
                observed.samples += observed.samples < 0 ? -1 : 1
                observed.total = max(observed.total, activity.queued + activity.running)
            }
        }
        DispatchQueue.global().async {
            while sampling.withLock({ $0 }) {
                sample()
                // Gives the core to any other runnable thread between samples: spinning flat out,
                // the sampler took a core from the whole parallel run, whose slower downloads kept
                // it spinning longer (270 s under ThreadSanitizer, against 0.4 s alone).
                sched_yield()
            }
            observed.withLock { $0.samples = -$0.samples }  // negative: the sampler has stopped
        }
        // Each answer samples too, while the downloads after it move: at least one sample a URL,
        // however the threads are scheduled.
        media.files(for: list) { _ in
            answered.withLock { $0 += 1 }
            sample()
        }
        await eventually("every URL is answered") { answered.withLock { $0 } == list.count }
        await eventually("nothing is queued or running") { media.activity == AutoProcessorActivity(queued: 0, running: 0) }
        sampling.withLock { $0 = false }
        await eventually("the sampler stopped") { observed.withLock { $0.samples } < 0 }
        let (peak, samples, total) = observed.withLock { $0 }
        #expect(-samples >= list.count, "too few samples to see anything")
        #expect(total > 2, "the list never queued behind the moving downloads")
        #expect(peak <= 2, "\(peak) running with a limit of 2 (\(-samples) samples)")
    }
}

/// A transport that holds every request until the test answers it, and counts how many it holds.
final class HeldTransport: DownloadTransport {
    private struct State {
        var started: [String] = []
        var sinks: [String: any DownloadSink] = [:]
        var moving = 0
        var peak = 0
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "held-transport")

    var decodesContentCodings: Bool { false }

    static func url(_ path: String) -> URL {
        URL(string: "http://held.invalid" + path) ?? URL(fileURLWithPath: "/")
    }

    static func body(_ path: String) -> Data {
        Data(("body of " + path).utf8)
    }

    /// Paths of the requests started, in order.
    var started: [String] { state.withLock { $0.started } }
    /// Paths of the requests started and not yet finished or cancelled, in the order they started.
    var held: [String] { state.withLock { state in state.started.filter { state.sinks[$0] != nil } } }
    /// The most requests held at once.
    var peak: Int { state.withLock { $0.peak } }

    func start(_ request: DownloadRequest, into sink: any DownloadSink) -> DownloadHandle {
        let path = request.url.path
        state.withLock { state in
            state.started.append(path)
            state.sinks[path] = sink
            state.moving += 1
            state.peak = max(state.peak, state.moving)
        }
        return DownloadHandle { [self] in end(path) { sink in sink.end(URLError(.cancelled)) } }
    }

    /// Answers `path` with its body, on the transport's queue.
    func finish(_ path: String) {
        end(path) { sink in
            let body = Self.body(path)
            guard sink.head(status: 200, fields: [HTTPField(name: "Content-Length", value: "\(body.count)")]) else {
                return sink.end(nil)
            }
            _ = body.withUnsafeBytes { sink.body($0) }
            sink.end(nil)
        }
    }

    /// Takes `path`'s sink (once) and delivers to it on the queue; counted as ended first, since
    /// its end may start the next transfer at once.
    private func end(_ path: String, _ deliver: @escaping @Sendable (any DownloadSink) -> Void) {
        guard let sink = state.withLock({ state -> (any DownloadSink)? in
            guard let sink = state.sinks.removeValue(forKey: path) else { return nil }
            state.moving -= 1
            return sink
        }) else { return }
        queue.async { deliver(sink) }
    }
}

/// Answers every request at once, calling the sink while it holds the lock its `start` takes.
final class SelfLockingTransport: DownloadTransport {
    static let body = Data("locked".utf8)
    private let lock = Locked(0)
    private let queue = DispatchQueue(label: "self-locking-transport")

    var decodesContentCodings: Bool { false }

    func start(_ request: DownloadRequest, into sink: any DownloadSink) -> DownloadHandle {
        lock.withLock { $0 += 1 }
        queue.async { [self] in
            lock.withLock { _ in
                guard sink.head(status: 200, fields: [HTTPField(name: "Content-Length", value: "\(Self.body.count)")]) else { return sink.end(nil) }
                _ = Self.body.withUnsafeBytes { sink.body($0) }
                sink.end(nil)
            }
        }
        return DownloadHandle {}
    }
}
