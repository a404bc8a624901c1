import Testing
@testable import Avenues
import AvenuesTestSupport

/// A run that asks its own processor for other keys: it lends its slot while it waits, so chains
/// deeper than `maxConcurrent` end, and a request that would wait for itself throws instead of
/// hanging.
@Suite("AutoProcessor: runs that ask their own processor", .timeLimit(.minutes(5)))
struct NestedRequestTests {
    typealias Machine = AutoProcessorStateMachine<String, Int>
    let ignore = Waiter<Int>.callback { _ in }

    private func job(_ step: Machine.WorkerStep) -> Machine.Job? {
        if case .run(let job, _) = step { return job }
        return nil
    }

    // MARK: The state machine

    @Test func aWaitingRunLendsItsOnlySlotAndTakesItBackAfter() throws {
        var machine = Machine(maxConcurrent: 1)
        let first = try #require(machine.claim("a", id: 1, priority: .visible, waiter: ignore).spawnWorker)
        let a = try #require(job(machine.start(worker: first)))
        // a's work asks for b: no free slot, so b waits in the queue…
        #expect(machine.claim("b", id: 2, priority: .visible, waiter: ignore).spawnWorker == nil)
        #expect(!machine.wouldWaitForItself(a, worker: first, on: "b"))
        // …until a lends its slot.
        let lent = machine.lend(a, worker: first, awaiting: "b")
        let second = try #require(lent)
        let b = try #require(job(machine.start(worker: second)))
        #expect(b.key == "b")
        #expect(machine.activity.running == 2)  // a still counts as running for whoever looks
        guard case .deliver = machine.finish(b, worker: second, result: .success(2)) else {
            Issue.record("b did not deliver")
            return
        }
        // A third key queued meanwhile takes the lent slot while a still waits.
        #expect(machine.claim("c", id: 3, priority: .visible, waiter: ignore).spawnWorker == nil)
        let c = try #require(job(machine.endDelivery(of: b, worker: second)))
        #expect(c.key == "c")
        machine.reclaim(a, worker: first, awaiting: "b")
        #expect(machine.lenders.isEmpty)
        // a and c both run now (one over the limit); the surplus worker leaves at its next step.
        guard case .deliver = machine.finish(c, worker: second, result: .success(3)) else {
            Issue.record("c did not deliver")
            return
        }
        #expect(machine.claim("d", id: 4, priority: .visible, waiter: ignore).spawnWorker == nil)
        guard case .exit(replacement: nil) = machine.endDelivery(of: c, worker: second) else {
            Issue.record("the surplus worker stayed")
            return
        }
        guard case .deliver = machine.finish(a, worker: first, result: .success(1)) else {
            Issue.record("a did not deliver")
            return
        }
        #expect(job(machine.endDelivery(of: a, worker: first))?.key == "d")
    }

    @Test func aPrefetchRunLendsItsPrefetchSlotToo() throws {
        // One worker, none kept back: a prefetch run holds the whole prefetch share.
        var machine = Machine(maxConcurrent: 2, reservedForVisible: 1)
        let first = try #require(machine.claim("a", id: 1, priority: .prefetch, waiter: ignore).spawnWorker)
        let a = try #require(job(machine.start(worker: first)))
        #expect(machine.claim("b", id: 2, priority: .prefetch, waiter: ignore).spawnWorker == nil)  // over the share
        let lent = machine.lend(a, worker: first, awaiting: "b")
        let second = try #require(lent)
        #expect(job(machine.start(worker: second))?.key == "b")
        #expect(machine.lendingPrefetch == 1)
        // Raised while it lends: its lent prefetch slot is given back to the count once, not twice.
        _ = machine.setPriority(.visible, key: "a", id: 1)
        #expect(machine.lendingPrefetch == 0 && machine.runningPrefetch == 1)
        machine.reclaim(a, worker: first, awaiting: "b")
        #expect(machine.lendingPrefetch == 0 && machine.runningPrefetch == 1)
    }

    @Test func aRunThatStopsWhileItWaitsLendsNothingMoreAndALateReclaimIsIgnored() throws {
        var machine = Machine(maxConcurrent: 1)
        let first = try #require(machine.claim("a", id: 1, priority: .prefetch, waiter: ignore).spawnWorker)
        let a = try #require(job(machine.start(worker: first)))
        _ = machine.claim("b", id: 2, priority: .prefetch, waiter: ignore)
        let lent = machine.lend(a, worker: first, awaiting: "b")
        #expect(lent != nil)
        #expect(machine.release("a", id: 1).cancelWorker == first)
        #expect(machine.lenders.isEmpty && machine.lendingPrefetch == 0 && machine.runningPrefetch == 0)
        machine.reclaim(a, worker: first, awaiting: "b")  // its wait ends after: nothing to give back
        #expect(machine.lenders.isEmpty && machine.lendingPrefetch == 0)
        // A lend for a run that no longer runs lends nothing.
        #expect(machine.lend(a, worker: first, awaiting: "b") == nil)
        #expect(machine.lenders.isEmpty)
    }

    @Test func aWaitForItselfIsFoundDirectlyAndThroughOtherRuns() throws {
        var machine = Machine(maxConcurrent: 3)
        var runs: [String: (job: Machine.Job, worker: UInt64)] = [:]
        for (id, key) in ["a", "b", "c"].enumerated() {
            let worker = try #require(machine.claim(key, id: UInt64(id), priority: .visible, waiter: ignore).spawnWorker)
            runs[key] = (try #require(job(machine.start(worker: worker))), worker)
        }
        let a = try #require(runs["a"]), b = try #require(runs["b"]), c = try #require(runs["c"])
        #expect(machine.wouldWaitForItself(a.job, worker: a.worker, on: "a"))
        // a waits for b, b for c: c asking for a (or b) would close the circle; asking d would not.
        _ = machine.lend(a.job, worker: a.worker, awaiting: "b")
        _ = machine.lend(b.job, worker: b.worker, awaiting: "c")
        #expect(machine.wouldWaitForItself(c.job, worker: c.worker, on: "a"))
        #expect(machine.wouldWaitForItself(c.job, worker: c.worker, on: "b"))
        #expect(!machine.wouldWaitForItself(c.job, worker: c.worker, on: "d"))
        #expect(!machine.wouldWaitForItself(a.job, worker: a.worker, on: "c"))  // a waits for c already: no circle
    }

    /// Random claims, releases, cancels, waits and their ends, with workers stepped by hand: the
    /// counts the limits read always match the runs, and everything drains to nothing.
    @Test(arguments: 0 ..< 500) func randomWaitsKeepTheCountsTrue(seed: UInt64) throws {
        var random = SplitMix64(seed: seed)
        let keys = (0 ..< 6).map { "k\($0)" }
        let maxConcurrent = Int.random(in: 1 ... 3, using: &random)
        var machine = Machine(maxConcurrent: maxConcurrent, reservedForVisible: Int.random(in: 0 ... 1, using: &random))
        enum WorkerState { case starting, running(Machine.Job), delivering(Machine.Job) }
        var workers: [UInt64: WorkerState] = [:]
        var waits: [(job: Machine.Job, worker: UInt64, key: String)] = []
        var claims: [(key: String, id: UInt64)] = []
        var nextID: UInt64 = 0
        func step(_ worker: UInt64, _ next: Machine.WorkerStep) {
            switch next {
            case .run(let job, _): workers[worker] = .running(job)
            case .deliver(_, _): break
            case .exit(let replacement):
                workers[worker] = nil
                if let replacement { workers[replacement] = .starting }
            }
        }
        func check() {
            var running = 0, prefetch = 0, lendingPrefetch = 0
            for (_, run) in machine.runs {
                guard case .running(let worker, let priority) = run.phase else { continue }
                running += 1
                if priority != .visible { prefetch += 1 }
                if let lender = machine.lenders[worker], lender.token == run.token, priority != .visible { lendingPrefetch += 1 }
            }
            #expect(machine.runningCount == running)
            #expect(machine.runningPrefetch == prefetch)
            #expect(machine.lendingPrefetch == lendingPrefetch)
            for (worker, lender) in machine.lenders {
                #expect(machine.runs.values.contains { run in
                    if case .running(worker, _) = run.phase { return run.token == lender.token }
                    return false
                }, "a lender whose run does not run")
            }
        }
        for _ in 0 ..< 300 {
            switch Int.random(in: 0 ..< 8, using: &random) {
            case 0, 1:
                nextID += 1
                let key = keys.randomElement(using: &random) ?? "k0"
                claims.append((key, nextID))
                let priority = LoadPriority.allCases.randomElement(using: &random) ?? .visible
                if let worker = machine.claim(key, id: nextID, priority: priority, waiter: ignore).spawnWorker { workers[worker] = .starting }
            case 2:
                guard !claims.isEmpty else { continue }
                let claim = claims.remove(at: Int.random(in: 0 ..< claims.count, using: &random))
                if let worker = machine.release(claim.key, id: claim.id).followUp.spawnWorker { workers[worker] = .starting }
            case 3:
                // A running job's work asks for a key (unless that would wait for itself).
                let running = workers.sorted { $0.key < $1.key }.compactMap { worker, state -> (UInt64, Machine.Job)? in
                    if case .running(let job) = state { return (worker, job) }
                    return nil
                }
                guard let (worker, job) = running.randomElement(using: &random) else { continue }
                let key = keys.randomElement(using: &random) ?? "k0"
                guard !machine.wouldWaitForItself(job, worker: worker, on: key) else { continue }
                nextID += 1
                claims.append((key, nextID))
                if let spawn = machine.claim(key, id: nextID, priority: .visible, waiter: ignore).spawnWorker { workers[spawn] = .starting }
                if let spawn = machine.lend(job, worker: worker, awaiting: key) { workers[spawn] = .starting }
                waits.append((job, worker, key))
            case 4:
                guard !waits.isEmpty else { continue }
                let wait = waits.remove(at: Int.random(in: 0 ..< waits.count, using: &random))
                machine.reclaim(wait.job, worker: wait.worker, awaiting: wait.key)
            case 5:
                if Bool.random(using: &random), let key = keys.randomElement(using: &random) {
                    for worker in machine.cancel(key).spawnWorkers { workers[worker] = .starting }
                }
            default:
                // A worker takes a step.
                guard let (worker, state) = workers.sorted(by: { $0.key < $1.key }).randomElement(using: &random) else { continue }
                switch state {
                case .starting: step(worker, machine.start(worker: worker))
                case .running(let job):
                    // Its work returns only once its waits are over (or its run was stopped).
                    if waits.contains(where: { $0.worker == worker && $0.job == job }), machine.lenders[worker]?.token == job.token { continue }
                    waits.removeAll { $0.worker == worker && $0.job == job }
                    let next = machine.finish(job, worker: worker, result: .success(1))
                    if case .deliver = next { workers[worker] = .delivering(job) } else { step(worker, next) }
                case .delivering(let job): step(worker, machine.endDelivery(of: job, worker: worker))
                }
            }
            check()
        }
        // Drain: every wait ends, every claim leaves, every worker steps until it exits.
        for wait in waits { machine.reclaim(wait.job, worker: wait.worker, awaiting: wait.key) }
        for claim in claims { if let worker = machine.release(claim.key, id: claim.id).followUp.spawnWorker { workers[worker] = .starting } }
        var rounds = 0
        while let (worker, state) = workers.min(by: { $0.key < $1.key }), rounds < 1_000 {
            rounds += 1
            switch state {
            case .starting: step(worker, machine.start(worker: worker))
            case .running(let job):
                let next = machine.finish(job, worker: worker, result: .success(1))
                if case .deliver = next { workers[worker] = .delivering(job) } else { step(worker, next) }
            case .delivering(let job): step(worker, machine.endDelivery(of: job, worker: worker))
            }
        }
        check()
        #expect(machine.tableSizes.isIdle, "seed \(seed): \(machine.tableSizes)")
        #expect(machine.lenders.isEmpty && machine.lendingPrefetch == 0)
    }

    // MARK: Processors

    /// A processor whose work for a key may ask the same processor for other keys.
    final class Recursive: Sendable {
        let processor = Shared<AutoProcessor<Int, Int>?>(nil)
        let runs = Shared<[Int: Int]>([:])
        init(maxConcurrent: Int, reservedForVisible: Int = 0, dependencies: @escaping @Sendable (Int) -> [Int]) {
            let made = AutoProcessor<Int, Int>(maxConcurrent: maxConcurrent, reservedForVisible: reservedForVisible, rateLimit: nil, executor: nil,
                                               propagatesPriority: false, work: { [weak self] key, _ in
                guard let self, let processor = self.processor.withLock({ $0 }) else { throw CancellationError() }
                self.runs.withLock { $0[key, default: 0] += 1 }
                var sum = key
                for dependency in dependencies(key) { sum &+= try await processor.value(for: dependency, priority: .prefetch) }
                return sum
            })
            processor.withLock { $0 = made }
        }
        var autoProcessor: AutoProcessor<Int, Int>? { processor.withLock { $0 } }
    }

    @Test func aChainTenTimesDeeperThanTheWorkersEnds() async throws {
        // Before: the first run held the only worker while it waited for the next key, which never
        // got one (a hang).
        let chain = Recursive(maxConcurrent: 1) { $0 > 0 ? [$0 - 1] : [] }
        let processor = try #require(chain.autoProcessor)
        #expect(try await processor.value(for: 10) == 55)
        #expect(chain.runs.withLock { $0 } == Dictionary(uniqueKeysWithValues: (0 ... 10).map { ($0, 1) }))
        await eventually("the processor is idle") { processor.tableSizes.isIdle }
    }

    @Test func sharedDependenciesAreMadeOnceAndPrefetchChainsEndWithTheirShareLent() async throws {
        // Every key below 40 asks for key/2 and key/3 (a DAG with shared children), at .prefetch,
        // on a processor that keeps one of two workers from prefetch work.
        let tree = Recursive(maxConcurrent: 2, reservedForVisible: 1) { key in key > 1 ? [key / 2, key / 3] : [] }
        let processor = try #require(tree.autoProcessor)
        func model(_ key: Int) -> Int { key > 1 ? key + model(key / 2) + model(key / 3) : key }
        try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for key in 30 ..< 40 { group.addTask { (key, try await processor.value(for: key, priority: .prefetch)) } }
            for try await (key, value) in group { #expect(value == model(key), "key \(key)") }
        }
        // De-duplicated while they overlap: no key is made more often than it was asked for at once.
        #expect(tree.runs.withLock { $0.keys.sorted() } == Array(Set((30 ..< 40).flatMap { key -> [Int] in
            var keys: [Int] = [], pending = [key]
            while let next = pending.popLast() { keys.append(next); if next > 1 { pending += [next / 2, next / 3] } }
            return keys
        })).sorted())
        await eventually("the processor is idle") { processor.tableSizes.isIdle }
    }

    @Test func aWorkAskingForItsOwnKeyThrowsACycleErrorInsteadOfWaitingForEver() async throws {
        let looping = Recursive(maxConcurrent: 4) { [$0] }
        let processor = try #require(looping.autoProcessor)
        let error = await #expect(throws: AutoProcessorCycleError.self) { try await processor.value(for: 7) }
        #expect(error?.key as? Int == 7 && error?.asker as? Int == 7)
        #expect(error?.description.contains("would wait for itself") == true)
        await eventually("the processor is idle") { processor.tableSizes.isIdle }
    }

    @Test func twoKeysAskedAtOnceThatAskForEachOtherThrowInsteadOfWaitingForEver() async throws {
        for _ in 0 ..< 20 {
            let pair = Recursive(maxConcurrent: 4) { [$0 == 1 ? 2 : 1] }
            let processor = try #require(pair.autoProcessor)
            async let one = #expect(throws: AutoProcessorCycleError.self) { try await processor.value(for: 1) }
            async let two = #expect(throws: AutoProcessorCycleError.self) { try await processor.value(for: 2) }
            _ = await (one, two)
            await eventually("the processor is idle") { processor.tableSizes.isIdle }
        }
    }

    @Test func aMultiplexerMapWhoseFetchAsksTheMapForAnotherKeyEndsWithOneFetchAtATime() async throws {
        let map = Shared<MultiplexerMap<Int, Int>?>(nil)
        let fetches = Shared<[Int]>([])
        let made = MultiplexerMap<Int, Int>(maxConcurrentFetches: 1) { key in
            fetches.withLock { $0.append(key) }
            guard key > 0, let map = map.withLock({ $0 }) else { return 1 }
            return try await map.value(for: key - 1) * 2
        }
        map.withLock { $0 = made }
        #expect(try await made.value(for: 12) == 4096)
        #expect(fetches.withLock { $0 }.sorted() == Array(0 ... 12))
        map.withLock { $0 = nil }
    }

    @Test func aMultiplexerMapWhoseFetchAsksForItsOwnKeyThrowsACycleErrorNamingTheMapsKey() async throws {
        let map = Shared<MultiplexerMap<Int, Int>?>(nil)
        let made = MultiplexerMap<Int, Int>(maxConcurrentFetches: 4) { key in
            guard let map = map.withLock({ $0 }) else { return 0 }
            return try await map.value(for: key)
        }
        map.withLock { $0 = made }
        let error = await #expect(throws: AutoProcessorCycleError.self) { try await made.value(for: 5) }
        #expect(error?.key as? Int == 5 && error?.asker as? Int == 5)
        #expect(error?.description == "the work of 5 asked the processor running it for 5: it would wait for itself for ever; a value must not depend on itself")
        map.withLock { $0 = nil }
    }

    @Test func cancellingTheCallerOfADeepChainStopsEveryRunAndLeavesNothingHeld() async throws {
        // The work of 12, in a chain from 30 on one worker, says it started and waits until it is
        // cancelled; the caller of 30 is cancelled then, and every run of the chain must stop.
        let (started, tell) = AsyncStream.makeStream(of: Int.self)
        let (never, _) = AsyncStream.makeStream(of: Void.self)
        let box = Shared<AutoProcessor<Int, Int>?>(nil)
        let processor = AutoProcessor<Int, Int>(maxConcurrent: 1) { key in
            if key == 12 {
                tell.yield(key)
                for await _ in never {}  // ends when the run's task is cancelled
                try Task.checkCancellation()
            }
            guard key > 0, let processor = box.withLock({ $0 }) else { return key }
            return try await processor.value(for: key - 1) + key
        }
        box.withLock { $0 = processor }
        defer { box.withLock { $0 = nil } }
        let caller = Task { try await processor.value(for: 30) }
        for await _ in started { break }
        #expect(processor.activity.running == 19)  // 30 down to 12, each lending its slot but the last
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        await eventually("every run of the chain stopped") { processor.tableSizes.isIdle }
        // The processor still works, with its one worker.
        #expect(try await processor.value(for: 3) == 6)
    }

    @Test func aRefusedRequestFromTheRunsTaskDoesNotTakeBackTheSlotAnotherRequestLent() async throws {
        // A's work starts a task (it inherits the run's name) that is cancelled before it asks for
        // K, then asks for K itself, lending its only slot. The cancelled task's request is refused;
        // before, it took the lent slot back, so the worker started for K left without running it
        // and A waited for ever. Every job runs on the test's executor, in order.
        let held = HeldExecutor()
        let box = Shared<AutoProcessor<String, Int>?>(nil)
        let (never, _) = AsyncStream.makeStream(of: Void.self)
        let processor = AutoProcessor<String, Int>(maxConcurrent: 1, executor: held) { key in
            guard key == "A", let processor = box.withLock({ $0 }) else { return 10 }
            let stray = Task(executorPreference: held) {
                for await _ in never {}  // ends at once: the task is cancelled before it runs
                _ = try? await processor.value(for: "K")
            }
            stray.cancel()
            return try await processor.value(for: "K") + 1
        }
        box.withLock { $0 = processor }
        defer { box.withLock { $0 = nil } }
        let caller = Task { try await processor.value(for: "A") }
        await eventually("A is queued") { processor.activity.queued == 1 }
        held.runAll()
        #expect(processor.state(for: "K") == .idle)
        guard processor.state(for: "A") == .idle else {
            Issue.record("A still waits: \(processor.activity)")
            caller.cancel()
            held.runAll()
            return
        }
        #expect(try await caller.value == 11)
    }

    /// Random dependency graphs (each key asks for some larger keys, at random priorities), asked
    /// for all at once by many callers, some of them cancelled: every caller not cancelled gets the
    /// model's value, a cancelled one that value or `CancellationError`, none waits for ever, and
    /// the processor ends idle.
    @Test(arguments: 0 ..< 30) func randomDependencyGraphsMatchTheModel(seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let count = 24
        let dependencies: [[Int]] = (0 ..< count).map { key in
            (key + 1 ..< count).filter { _ in Int.random(in: 0 ..< 4, using: &random) == 0 }
        }
        var model: [Int] = Array(repeating: 0, count: count)
        for key in (0 ..< count).reversed() { model[key] = dependencies[key].reduce(key) { $0 &+ model[$1] } }
        let priorities = (0 ..< count).map { _ in LoadPriority.allCases.randomElement(using: &random) ?? .visible }
        let box = Shared<AutoProcessor<Int, Int>?>(nil)
        let maxConcurrent = Int.random(in: 1 ... 3, using: &random)
        // Threads of its own: the suite's long CPU-bound tests hold Swift's two pool threads for tens
        // of seconds in a parallel run, and this test's hundreds of hops would wait them out.
        let executor = ThreadExecutor(threads: 2)
        defer { executor.finish() }
        let processor = AutoProcessor<Int, Int>(
            maxConcurrent: maxConcurrent, reservedForVisible: Int.random(in: 0 ..< maxConcurrent, using: &random), executor: executor
        ) { key in
            guard let processor = box.withLock({ $0 }) else { throw CancellationError() }
            var sum = key
            for dependency in dependencies[key] { sum &+= try await processor.value(for: dependency, priority: priorities[dependency]) }
            return sum
        }
        box.withLock { $0 = processor }
        defer { box.withLock { $0 = nil } }
        let callers = (0 ..< 40).map { _ in (key: Int.random(in: 0 ..< count, using: &random), cancelled: Int.random(in: 0 ..< 5, using: &random) == 0) }
        let tasks = callers.map { caller in
            Task(executorPreference: executor) { try await processor.value(for: caller.key, priority: priorities[caller.key]) }
        }
        for (task, caller) in zip(tasks, callers) where caller.cancelled { task.cancel() }
        for (task, caller) in zip(tasks, callers) {
            switch await task.result {
            case .success(let value): #expect(value == model[caller.key], "seed \(seed), key \(caller.key)")
            case .failure(let error):
                // Only a cancelled caller fails: a run it shared goes on for the others.
                #expect(caller.cancelled && error is CancellationError, "seed \(seed), key \(caller.key): \(error)")
            }
        }
        await eventually("the processor is idle") { processor.tableSizes.isIdle }
    }
}
