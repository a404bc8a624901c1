import Testing
@testable import Avenues

/// The processor's decisions, step by step, with no threads: each test is one exact interleaving.
@Suite("AutoProcessor state machine")
struct AutoProcessorStateMachineTests {
    typealias Machine = AutoProcessorStateMachine<String, Int>
    let ignore = Waiter<Int>.callback { _ in }

    private func spawned(_ action: Machine.ClaimAction) -> UInt64? {
        action.spawnWorker
    }

    private func job(_ step: Machine.WorkerStep) -> Machine.Job? {
        if case .run(let job, _) = step { return job }
        return nil
    }

    /// A machine whose only worker runs key "busy" (claim 0): what is claimed next waits in the queue.
    private func busyMachine() throws -> (machine: Machine, worker: UInt64, busy: Machine.Job) {
        var machine = Machine(maxConcurrent: 1)
        let worker = try #require(spawned(machine.claim("busy", id: 0, priority: .visible, waiter: ignore)))
        let busy = try #require(job(machine.start(worker: worker)))
        return (machine, worker, busy)
    }

    @Test func claimThenReleaseInOneTickLeavesNothingForTheWorker() throws {
        var machine = Machine(maxConcurrent: 2)
        let worker = try #require(spawned(machine.claim("k", id: 1, priority: .visible, waiter: ignore)))
        _ = machine.release("k", id: 1)
        guard case .exit(replacement: nil) = machine.start(worker: worker) else {
            Issue.record("the worker was given work nobody wants")
            return
        }
        #expect(machine.tableSizes.isIdle)
    }

    @Test func aLateFinishOfACancelledRunIsDroppedAndTheNewRunContinues() throws {
        var machine = Machine(maxConcurrent: 2)
        let first = try #require(spawned(machine.claim("k", id: 1, priority: .visible, waiter: ignore)))
        let oldJob = try #require(job(machine.start(worker: first)))
        let release = machine.release("k", id: 1)
        #expect(release.cancelWorker == first)

        let second = try #require(spawned(machine.claim("k", id: 2, priority: .visible, waiter: ignore)))
        let newJob = try #require(job(machine.start(worker: second)))
        #expect(newJob.token != oldJob.token)

        // The cancelled worker reports late: its result is dropped and the worker leaves.
        guard case .exit = machine.finish(oldJob, worker: first, result: .success(1)) else {
            Issue.record("a cancelled worker kept working")
            return
        }
        #expect(machine.state(for: "k") == .running)
        guard case .deliver(let waiters, .success(2)) = machine.finish(newJob, worker: second, result: .success(2)) else {
            Issue.record("the newer run did not deliver its own result")
            return
        }
        #expect(waiters.count == 1)
    }

    @Test func aClaimDuringTheDeliveryOfASuccessStartsANewRunInsteadOfGettingThatValue() throws {
        // Asked after the work returned: the value may be outdated for this caller (a refresh).
        var machine = Machine(maxConcurrent: 1)
        let worker = try #require(spawned(machine.claim("k", id: 1, priority: .visible, waiter: ignore)))
        let work = try #require(job(machine.start(worker: worker)))
        guard case .deliver = machine.finish(work, worker: worker, result: .success(5)) else {
            Issue.record("no delivery")
            return
        }
        #expect(machine.state(for: "k") == .completed)
        _ = machine.claim("k", id: 2, priority: .visible, waiter: ignore)
        #expect(machine.state(for: "k") == .queued)
        let again = try #require(job(machine.endDelivery(of: work, worker: worker)))
        #expect(again.key == "k")
        #expect(again.token != work.token)
    }

    @Test func aJoinerDuringDeliveryOfAFailureStartsANewRun() throws {
        var machine = Machine(maxConcurrent: 1)
        let worker = try #require(spawned(machine.claim("k", id: 1, priority: .visible, waiter: ignore)))
        let work = try #require(job(machine.start(worker: worker)))
        _ = machine.finish(work, worker: worker, result: .failure(TestError("x")))
        #expect(machine.state(for: "k") == .failed)
        _ = machine.claim("k", id: 2, priority: .visible, waiter: ignore)
        #expect(machine.state(for: "k") == .queued)
        // The delivering worker must not remove the new run; it picks it up instead.
        let retry = try #require(job(machine.endDelivery(of: work, worker: worker)))
        #expect(retry.key == "k")
        #expect(retry.token != work.token)
    }

    @Test func aRunQueuedTwiceAtOneLevelLeavesNothingQueuedOnceItIsTaken() throws {
        // Lowered and raised again while another key was queued, `k` has two entries at `.visible`:
        // its first, stale for good, and one behind `x` (a run that changes priority goes to the
        // back of its new queue). Both cancelled once taken, their workers leave without looking
        // at the queue: `k`'s other entry kept the key alive in an idle processor (the random
        // lending test found it).
        var machine = Machine(maxConcurrent: 2)
        let first = try #require(spawned(machine.claim("k", id: 1, priority: .visible, waiter: ignore)))
        let second = try #require(spawned(machine.claim("x", id: 2, priority: .visible, waiter: ignore)))
        _ = machine.setPriority(.prefetch, key: "k", id: 1)
        _ = machine.setPriority(.visible, key: "k", id: 1)
        let x = try #require(job(machine.start(worker: first)))
        let k = try #require(job(machine.start(worker: second)))
        #expect([x.key, k.key] == ["x", "k"])
        _ = machine.release("k", id: 1)
        _ = machine.release("x", id: 2)
        for (run, worker) in [(x, first), (k, second)] {
            guard case .exit(replacement: nil) = machine.finish(run, worker: worker, result: .success(1)) else {
                Issue.record("a cancelled worker stayed")
                return
            }
        }
        #expect(machine.tableSizes.isIdle, "\(machine.tableSizes)")
    }

    @Test func workersNeverExceedMaxConcurrent() {
        var machine = Machine(maxConcurrent: 3)
        var spawnedWorkers = 0
        for key in 0..<20 {
            if spawned(machine.claim("\(key)", id: UInt64(key), priority: .prefetch, waiter: ignore)) != nil {
                spawnedWorkers += 1
            }
        }
        #expect(spawnedWorkers == 3)
        #expect(machine.workers.count == 3)
    }

    @Test func aCancelledWorkerIsReplacedWhenWorkIsQueued() throws {
        var machine = Machine(maxConcurrent: 1)
        let worker = try #require(spawned(machine.claim("a", id: 1, priority: .visible, waiter: ignore)))
        let running = try #require(job(machine.start(worker: worker)))
        _ = machine.claim("b", id: 2, priority: .visible, waiter: ignore)
        _ = machine.cancel("a")
        guard case .exit(let replacement?) = machine.finish(running, worker: worker, result: .failure(CancellationError())) else {
            Issue.record("the cancelled worker was not replaced")
            return
        }
        #expect(job(machine.start(worker: replacement))?.key == "b")
    }

    @Test func onlyTheCancelledWorkerLeavesAndTheProcessorEndsEmpty() throws {
        var machine = Machine(maxConcurrent: 2)
        let first = try #require(spawned(machine.claim("a", id: 1, priority: .visible, waiter: ignore)))
        let second = try #require(spawned(machine.claim("b", id: 2, priority: .visible, waiter: ignore)))
        let a = try #require(job(machine.start(worker: first)))
        let b = try #require(job(machine.start(worker: second)))
        #expect(machine.release("a", id: 1).cancelWorker == first)
        _ = machine.claim("c", id: 3, priority: .visible, waiter: ignore)
        // The healthy worker delivers b and takes c; the cancelled one leaves without a replacement,
        // because no work is left queued.
        guard case .deliver = machine.finish(b, worker: second, result: .success(2)) else {
            Issue.record("b was not delivered")
            return
        }
        let c = try #require(job(machine.endDelivery(of: b, worker: second)))
        guard case .exit(replacement: nil) = machine.finish(a, worker: first, result: .failure(CancellationError())) else {
            Issue.record("the cancelled worker did not leave alone")
            return
        }
        guard case .deliver = machine.finish(c, worker: second, result: .success(3)) else {
            Issue.record("c was not delivered")
            return
        }
        guard case .exit(replacement: nil) = machine.endDelivery(of: c, worker: second) else {
            Issue.record("the last worker did not leave")
            return
        }
        #expect(machine.tableSizes.isIdle)
        #expect(machine.cancelledWorkers == 0)
        #expect(spawned(machine.claim("d", id: 4, priority: .visible, waiter: ignore)) != nil)
    }

    @Test func waitersAreHandedOutOnceEachInTheOrderTheyClaimed() throws {
        let resumed = Shared<[UInt64]>([])
        func recorder(_ id: UInt64) -> Waiter<Int> { .callback { _ in resumed.withLock { $0.append(id) } } }
        var machine = Machine(maxConcurrent: 1)
        let worker = try #require(spawned(machine.claim("k", id: 1, priority: .prefetch, waiter: recorder(1))))
        let run = try #require(job(machine.start(worker: worker)))
        for id: UInt64 in 2...5 { _ = machine.claim("k", id: id, priority: id == 4 ? .visible : .prefetch, waiter: recorder(id)) }
        _ = machine.release("k", id: 3)
        guard case .deliver(let waiters, _) = machine.finish(run, worker: worker, result: .success(1)) else {
            Issue.record("no delivery")
            return
        }
        #expect(waiters.count == 4)
        for waiter in waiters { waiter.resume(with: .success(1)) }
        #expect(resumed.withLock { $0 } == [1, 2, 4, 5])

        // A run with one waiter hands it out once, too.
        resumed.withLock { $0 = [] }
        _ = machine.endDelivery(of: run, worker: worker)
        let single = try #require(spawned(machine.claim("j", id: 6, priority: .visible, waiter: recorder(6))))
        let singleRun = try #require(job(machine.start(worker: single)))
        guard case .deliver(let one, _) = machine.finish(singleRun, worker: single, result: .success(2)) else {
            Issue.record("no delivery")
            return
        }
        for waiter in one { waiter.resume(with: .success(2)) }
        #expect(one.count == 1)
        #expect(resumed.withLock { $0 } == [6])
    }

    @Test func queueChurnWhileWorkersAreBusyStaysBounded() throws {
        var (machine, _, _) = try busyMachine()
        // A user scrolling for a long time: claims made and released while the only worker is busy.
        for id in 1...100_000 {
            _ = machine.claim("row\(id % 500)", id: UInt64(id), priority: id.isMultiple(of: 3) ? .visible : .prefetch, waiter: ignore)
            _ = machine.release("row\(id % 500)", id: UInt64(id))
        }
        #expect(machine.tableSizes.runs == 1)
        #expect(machine.tableSizes.queueEntries <= 70)
    }

    @Test func loweringTheOnlyVisibleClaimMovesQueuedWorkBack() throws {
        var (machine, worker, busy) = try busyMachine()
        _ = machine.claim("a", id: 1, priority: .visible, waiter: ignore)
        _ = machine.claim("b", id: 2, priority: .visible, waiter: ignore)
        _ = machine.setPriority(.prefetch, key: "a", id: 1)
        guard case .deliver = machine.finish(busy, worker: worker, result: .success(0)) else {
            Issue.record("no delivery")
            return
        }
        #expect(job(machine.endDelivery(of: busy, worker: worker))?.key == "b")
    }

    @Test func whenEveryClaimIsReleasedTheQueueHoldsNothing() throws {
        var machine = Machine(maxConcurrent: 1)
        let worker = try #require(spawned(machine.claim("running", id: 0, priority: .visible, waiter: ignore)))
        let running = try #require(job(machine.start(worker: worker)))
        for id in 1...9 { _ = machine.claim("queued\(id)", id: UInt64(id), priority: id.isMultiple(of: 2) ? .visible : .prefetch, waiter: ignore) }
        #expect(machine.tableSizes.queueEntries == 9)
        for id in 0...9 { _ = machine.release(id == 0 ? "running" : "queued\(id)", id: UInt64(id)) }
        // Before: 9 stale queue entries stayed (keeping their keys alive) until 33 piled up.
        #expect(machine.tableSizes.queueEntries == 0)
        guard case .exit(replacement: nil) = machine.finish(running, worker: worker, result: .success(0)) else {
            Issue.record("the cancelled worker was given more work")
            return
        }
        #expect(machine.tableSizes.isIdle)
    }

    // MARK: Admission control

    @Test func prefetchWorkHoldsAtMostItsShareOfWorkersAndVisibleWorkFindsOneFree() throws {
        var machine = Machine(maxConcurrent: 3, reservedForVisible: 1)
        var workers: [UInt64] = []
        for id in 1...5 {
            if let worker = spawned(machine.claim("p\(id)", id: UInt64(id), priority: .prefetch, waiter: ignore)) { workers.append(worker) }
        }
        #expect(workers.count == 2)  // 3 − 1 reserved
        let started = workers.compactMap { job(machine.start(worker: $0)) }
        #expect(started.map(\.key) == ["p1", "p2"])
        let visibleWorker = try #require(spawned(machine.claim("v", id: 10, priority: .visible, waiter: ignore)))
        #expect(job(machine.start(worker: visibleWorker))?.key == "v")
        // Finishing a prefetch lets the next prefetch take its worker; the visible one stays separate.
        guard case .deliver = machine.finish(started[0], worker: workers[0], result: .success(1)) else {
            Issue.record("no delivery")
            return
        }
        #expect(job(machine.endDelivery(of: started[0], worker: workers[0]))?.key == "p3")
    }

    @Test func raisingARunningPrefetchFreesItsPrefetchSlotForQueuedPrefetchWork() throws {
        var machine = Machine(maxConcurrent: 2, reservedForVisible: 1)
        let worker = try #require(spawned(machine.claim("p1", id: 1, priority: .prefetch, waiter: ignore)))
        #expect(job(machine.start(worker: worker))?.key == "p1")
        #expect(spawned(machine.claim("p2", id: 2, priority: .prefetch, waiter: ignore)) == nil)  // over its share
        let raise = machine.setPriority(.visible, key: "p1", id: 1)
        #expect(raise.reprioritized?.key == "p1" && raise.reprioritized?.worker == worker)
        #expect(machine.runningPriority(of: "p1", worker: worker) == .visible)
        #expect(machine.runningPriority(of: "p1", worker: worker &+ 1) == nil)  // not that worker's run
        let second = try #require(raise.spawnWorker)  // the freed prefetch slot goes to p2
        #expect(job(machine.start(worker: second))?.key == "p2")
    }

    @Test(arguments: ["released", "cancelled", "cancelled by predicate"])
    func cancelledPrefetchWorkFreesItsShareForQueuedPrefetchWorkAtOnce(how: String) throws {
        // Before: p2 waited, with two workers free, until p1's cancelled work returned (found by
        // AutoProcessorPromiseTests). The cancelled worker keeps its own slot; the share is free.
        var machine = Machine(maxConcurrent: 3, reservedForVisible: 2)
        let first = try #require(spawned(machine.claim("p1", id: 1, priority: .prefetch, waiter: ignore)))
        #expect(job(machine.start(worker: first))?.key == "p1")
        #expect(spawned(machine.claim("p2", id: 2, priority: .prefetch, waiter: ignore)) == nil)  // over its share
        let spawn: [UInt64]
        switch how {
        case "released":
            let release = machine.release("p1", id: 1)
            #expect(release.cancelWorker == first)
            spawn = release.followUp.spawnWorker.map { [$0] } ?? []
        case "cancelled":
            let cancel = machine.cancel("p1")
            #expect(cancel.cancelWorkers == [first])
            spawn = cancel.spawnWorkers
        default:
            let cancel = machine.cancel { $0 == "p1" }
            #expect(cancel.cancelWorkers == [first])
            spawn = cancel.spawnWorkers
        }
        let second = try #require(spawn.first)
        #expect(spawn.count == 1)
        #expect(job(machine.start(worker: second))?.key == "p2")
        // The cancelled work returns late: its worker leaves, with nothing left for a replacement.
        guard case .exit(replacement: nil) = machine.finish(Machine.Job(key: "p1", token: 1), worker: first, result: .success(1)) else {
            Issue.record("the cancelled worker did not leave")
            return
        }
    }

    @Test func cancelledVisibleWorkKeepsItsWorkersSlotUntilItReturns() throws {
        // The limit counts work that has not returned: a cancelled visible run frees no share.
        var machine = Machine(maxConcurrent: 1)
        let worker = try #require(spawned(machine.claim("v1", id: 1, priority: .visible, waiter: ignore)))
        #expect(job(machine.start(worker: worker))?.key == "v1")
        #expect(spawned(machine.claim("v2", id: 2, priority: .visible, waiter: ignore)) == nil)
        #expect(machine.cancel("v1").spawnWorkers.isEmpty)
        guard case .exit(let replacement?) = machine.finish(Machine.Job(key: "v1", token: 1), worker: worker, result: .success(1)) else {
            Issue.record("no replacement took v2")
            return
        }
        #expect(job(machine.start(worker: replacement))?.key == "v2")
    }

    @Test func aWorkerStartedForVisibleWorkHoldsNoSlotOfThePrefetchShare() throws {
        // Before: the worker started for v counted against the prefetch share until it started, so
        // raising p1 (which frees the share) started nothing, and p2 waited for p1 or v to return.
        var machine = Machine(maxConcurrent: 3, reservedForVisible: 2)
        let first = try #require(spawned(machine.claim("p1", id: 1, priority: .prefetch, waiter: ignore)))
        #expect(job(machine.start(worker: first))?.key == "p1")
        #expect(spawned(machine.claim("p2", id: 2, priority: .prefetch, waiter: ignore)) == nil)
        let visible = try #require(spawned(machine.claim("v", id: 3, priority: .visible, waiter: ignore)))
        let forP2 = try #require(machine.setPriority(.visible, key: "p1", id: 1).spawnWorker)
        #expect(job(machine.start(worker: visible))?.key == "v")
        #expect(job(machine.start(worker: forP2))?.key == "p2")
    }

    @Test(arguments: [false, true])
    func aRunRaisedAndLoweredAgainGoesToTheBackOfItsQueueAndIsCountedOnce(compacted: Bool) throws {
        // A row that scrolls on screen and off again: prefetch, visible, prefetch. Before, its first
        // prefetch entry came back to life (same run, same priority again): it jumped the rows
        // queued after it, and a compaction of the queue kept both entries as live, counted the run
        // twice, and drove the stale count below zero once they were taken (found by
        // AutoProcessorPromiseTests).
        var (machine, worker, busy) = try busyMachine()
        _ = machine.claim("a", id: 1, priority: .prefetch, waiter: ignore)
        _ = machine.claim("b", id: 2, priority: .prefetch, waiter: ignore)
        _ = machine.setPriority(.visible, key: "a", id: 1)
        _ = machine.setPriority(.prefetch, key: "a", id: 1)
        if compacted {
            // Enough prefetch work claimed and dropped to compact the prefetch queue.
            for id in 200 ..< 240 as Range<UInt64> {
                _ = machine.claim("drop\(id)", id: id, priority: .prefetch, waiter: ignore)
                _ = machine.release("drop\(id)", id: id)
            }
        }
        #expect(machine.activity.queued == 2)
        guard case .deliver = machine.finish(busy, worker: worker, result: .success(0)) else {
            Issue.record("no delivery")
            return
        }
        var order: [String] = []
        var step = machine.endDelivery(of: busy, worker: worker)
        while case .run(let next, _) = step {
            order.append(next.key)
            guard case .deliver = machine.finish(next, worker: worker, result: .success(0)) else { break }
            step = machine.endDelivery(of: next, worker: worker)
        }
        #expect(order == ["b", "a"])  // a went to the back of the prefetch queue when it came back
        #expect(machine.tableSizes.isIdle, "\(machine.tableSizes)")
        #expect(machine.staleEntries.allSatisfy { $0 == 0 }, "\(machine.staleEntries)")
    }

    @Test func withOneWorkerPrefetchWorkStillRuns() throws {
        var machine = Machine(maxConcurrent: 1, reservedForVisible: 1)
        let worker = try #require(spawned(machine.claim("p", id: 1, priority: .prefetch, waiter: ignore)))
        #expect(job(machine.start(worker: worker))?.key == "p")
    }
    // MARK: Background work

    private func queuedPriority(_ machine: Machine, _ key: String) -> LoadPriority? {
        if case .queued(let priority)? = machine.runs[key]?.phase { return priority }
        return nil
    }

    @Test func backgroundWorkRunsAfterPrefetchAndVisibleWorkAndFollowsItsHighestClaim() throws {
        var (machine, worker, current) = try busyMachine()
        _ = machine.claim("b1", id: 1, priority: .background, waiter: ignore)
        _ = machine.claim("p1", id: 2, priority: .prefetch, waiter: ignore)
        _ = machine.claim("b2", id: 3, priority: .background, waiter: ignore)
        _ = machine.claim("v1", id: 4, priority: .visible, waiter: ignore)
        // A second, higher claim on a background key lifts it (here to prefetch, behind p1).
        _ = machine.claim("b2", id: 5, priority: .prefetch, waiter: ignore)
        #expect(queuedPriority(machine, "b2") == .prefetch)
        var order: [String] = []
        while true {
            guard case .deliver = machine.finish(current, worker: worker, result: .success(0)) else {
                Issue.record("no delivery")
                return
            }
            guard let next = job(machine.endDelivery(of: current, worker: worker)) else { break }
            order.append(next.key)
            current = next
        }
        #expect(order == ["v1", "p1", "b2", "b1"])
    }

    @Test func backgroundWorkSharesThePrefetchWorkersAndNeverTakesTheReservedOne() throws {
        var machine = Machine(maxConcurrent: 3, reservedForVisible: 1)
        var workers: [UInt64] = []
        for id in 1...2 {
            if let worker = spawned(machine.claim("p\(id)", id: UInt64(id), priority: .prefetch, waiter: ignore)) { workers.append(worker) }
        }
        #expect(workers.count == 2)
        let started = workers.compactMap { job(machine.start(worker: $0)) }
        #expect(spawned(machine.claim("b", id: 3, priority: .background, waiter: ignore)) == nil)  // no share left
        let visible = try #require(spawned(machine.claim("v", id: 4, priority: .visible, waiter: ignore)))
        #expect(job(machine.start(worker: visible))?.key == "v")
        guard case .deliver = machine.finish(started[0], worker: workers[0], result: .success(1)) else {
            Issue.record("no delivery")
            return
        }
        #expect(job(machine.endDelivery(of: started[0], worker: workers[0]))?.key == "b")
        // Dropping the only prefetch claim of a key with a background one moves it back down.
        _ = machine.claim("x", id: 5, priority: .prefetch, waiter: ignore)
        _ = machine.claim("x", id: 6, priority: .background, waiter: ignore)
        _ = machine.release("x", id: 5)
        #expect(queuedPriority(machine, "x") == .background)
    }
}
