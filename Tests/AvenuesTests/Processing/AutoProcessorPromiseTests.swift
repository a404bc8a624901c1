import Testing
@testable import Avenues
import AvenuesTestSupport

/// AutoProcessor's state machine under seeded random events — claims, releases (also of claims
/// already answered), priority changes, cancellation by key, by predicate and of everything, workers
/// that start, return, fail, deliver and exit, and runs that ask the processor for other keys while
/// they run (lending their slot) — checked against what its callers are promised, after every event:
///
/// - every claim is answered at most once, with its own run's value or failure, or a cancellation;
/// - a released claim that was not answered yet gets its waiter back; one already answered does not;
/// - no key's work runs on two live workers at once;
/// - work is handed out highest priority first, at the priority of its highest claim, first come
///   first served within a priority (a raised or lowered run goes to the back of its new
///   priority), and prefetch work only within its share of workers;
/// - queued work always has a worker that will come for it: nothing is stranded;
/// - the tables hold exactly the claims and workers the model holds.
///
/// Then the workers run until none is left: every claim must have been answered and the tables must
/// be empty. `NestedRequestTests.randomWaitsKeepTheCountsTrue` checks the counts behind the limits;
/// this checks what callers see.
@Suite("AutoProcessor state machine promises")
struct AutoProcessorPromiseTests {
    typealias Machine = AutoProcessorStateMachine<Int, String>

    @Test(arguments: 1 ... 40 as ClosedRange<UInt64>)
    func everyClaimIsAnsweredOnceAndNothingIsStranded(seed: UInt64) {
        var model = Model(seed: seed)
        for step in 0 ..< 1_500 {
            model.step = step
            model.randomEvent()
            if let failure = model.failure {
                Issue.record("seed \(seed), step \(step): \(failure)\n\(model.history.suffix(12).joined(separator: "\n"))")
                return
            }
        }
        model.drain()
        if let failure = model.failure {
            Issue.record("seed \(seed), draining: \(failure)\n\(model.history.suffix(12).joined(separator: "\n"))")
        }
    }

    /// What callers and workers hold, beside the machine.
    struct Model {
        struct Claim {
            let key: Int
            /// The run the claim joined (a queued run's token changes with its priority): its answer
            /// must be that run's.
            var token: UInt64
            /// The worker whose run asked for it (a request made from inside a run), if any.
            let asker: UInt64?
            var priority: LoadPriority
            /// Its run returned and its waiter is with the delivering worker.
            var delivering = false
        }

        enum WorkerState {
            case starting
            case running(Machine.Job)
            case delivering(Machine.Job, Waiters<String>, Result<String, any Error>, resumed: Bool)
        }

        struct Worker {
            var state = WorkerState.starting
            /// Its task was cancelled (its run lost its last claim, or was cancelled).
            var cancelled = false
            /// Claims its run made and has not had answered.
            var awaiting: [UInt64: Int] = [:]
            /// Keys whose awaited claims were answered and whose wait is not yet taken back.
            var ended: [Int] = []
            /// Whether the machine was told of the wait (a claim refused as a cycle lends nothing).
            var lentAwaits = 0
        }

        var machine: Machine
        var random: SplitMix64
        let maxConcurrent: Int
        let keys: Int
        var claims: [UInt64: Claim] = [:]
        /// The claims answered, with their keys.
        var answered: [UInt64: Int] = [:]
        var workers: [UInt64: Worker] = [:]
        var nextClaim: UInt64 = 0
        let answers = Shared<[(id: UInt64, outcome: String)]>([])
        var failure: String?
        var step = 0
        /// Where each queued run waits: the priority, its run, and the event at which it took its
        /// place at the back of that priority's queue (created, raised or lowered).
        var places: [Int: (level: LoadPriority, token: UInt64, since: Int)] = [:]
        var events = 0
        var history: [String] = []

        init(seed: UInt64) {
            random = SplitMix64(seed: seed)
            maxConcurrent = Int.random(in: 1 ... 4, using: &random)
            let reserved = Int.random(in: 0 ... maxConcurrent, using: &random)
            keys = Int.random(in: 2 ... 9, using: &random)
            machine = Machine(maxConcurrent: maxConcurrent, reservedForVisible: reserved)
        }

        mutating func fail(_ message: String) {
            if failure == nil { failure = message }
        }

        func waiter(for id: UInt64) -> Waiter<String> {
            .callback { [answers] result in
                let outcome = switch result {
                case .success(let value): "value \(value)"
                case .failure(let error as TestError): "failure \(error.message)"
                case .failure(is CancellationError): "cancelled"
                case .failure(let error): "unexpected \(error)"
                }
                answers.withLock { $0.append((id, outcome)) }
            }
        }

        // MARK: Events

        mutating func randomEvent() {
            let roll = Int.random(in: 0 ..< 100, using: &random)
            switch roll {
            case 0 ..< 22: claimFromOutside()
            case 22 ..< 30: releaseFromOutside()
            case 30 ..< 37: changePriority()
            case 37 ..< 40:
                let key = Int.random(in: 0 ..< keys, using: &random)
                history.append("cancel \(key)")
                carryOut(machine.cancel(key))
            case 40 ..< 42:
                let parity = Int.random(in: 0 ... 1, using: &random)
                history.append("cancel where key % 2 == \(parity)")
                carryOut(machine.cancel { $0 % 2 == parity })
            case 42:
                history.append("cancel all")
                carryOut(machine.cancelAll())
            default:
                let ids = workers.keys.sorted()
                guard let worker = ids.randomElement(using: &random) else { return }
                stepWorker(worker, mayAsk: true)
            }
            check()
        }

        mutating func claimFromOutside() {
            let key = Int.random(in: 0 ..< keys, using: &random)
            let priority = LoadPriority.allCases.randomElement(using: &random) ?? .visible
            claim(key, priority: priority, asker: nil)
        }

        @discardableResult
        mutating func claim(_ key: Int, priority: LoadPriority, asker: UInt64?) -> UInt64 {
            nextClaim += 1
            let id = nextClaim
            history.append("claim \(id) on \(key) at \(priority)\(asker.map { " by worker \($0)" } ?? "")")
            let action = machine.claim(key, id: id, priority: priority, waiter: waiter(for: id))
            guard let token = machine.runs[key]?.token else {
                fail("claim \(id) on \(key) left no run")
                return id
            }
            claims[id] = Claim(key: key, token: token, asker: asker, priority: priority)
            spawned(action.spawnWorker)
            return id
        }

        mutating func releaseFromOutside() {
            // Now and then a claim answered long ago: releasing it must change nothing.
            let outside = claims.filter { $0.value.asker == nil }.keys.sorted()
            let id: UInt64
            if Int.random(in: 0 ..< 5, using: &random) == 0, let old = answered.keys.sorted().randomElement(using: &random) {
                id = old
            } else if let live = outside.randomElement(using: &random) {
                id = live
            } else {
                return
            }
            guard let key = claims[id]?.key ?? answered[id] else { return }
            release(id, key: key)
        }

        mutating func release(_ id: UInt64, key: Int) {
            history.append("release \(id) on \(key)")
            let before = machine.tableSizes
            let action = machine.release(key, id: id)
            switch claims[id] {
            case let claim? where !claim.delivering:
                guard let waiter = action.waiter else { return fail("releasing unanswered claim \(id) gave no waiter back") }
                waiter.resume(with: .failure(CancellationError()))
            default:
                // Answered, or being answered by a delivering worker: the release is too late.
                if action.waiter != nil || action.cancelWorker != nil || machine.tableSizes != before {
                    return fail("releasing claim \(id), answered or being answered, changed the machine")
                }
            }
            if let worker = action.cancelWorker { cancelled(worker) }
            spawned(action.followUp.spawnWorker)
            takeAnswers()
        }

        mutating func changePriority() {
            guard let id = claims.keys.sorted().randomElement(using: &random), let claim = claims[id] else { return }
            let priority = LoadPriority.allCases.randomElement(using: &random) ?? .visible
            history.append("claim \(id) on \(claim.key) to \(priority)")
            let action = machine.setPriority(priority, key: claim.key, id: id)
            if !claim.delivering { claims[id]?.priority = priority }
            spawned(action.spawnWorker)
        }

        mutating func carryOut(_ action: Machine.CancelAction) {
            for worker in action.cancelWorkers { cancelled(worker) }
            for worker in action.spawnWorkers { spawned(worker) }
            for waiter in action.waiters { waiter.resume(with: .failure(CancellationError())) }
            takeAnswers()
        }

        // MARK: Workers

        /// One step of `worker`, as its task would take it. Returns whether it could take one.
        @discardableResult
        mutating func stepWorker(_ id: UInt64, mayAsk: Bool) -> Bool {
            guard let worker = workers[id] else { return false }
            switch worker.state {
            case .starting:
                history.append("worker \(id) starts")
                follow(id, machine.start(worker: id))
            case .running(let job):
                if let key = workers[id]?.ended.popLast() {
                    // An awaited claim was answered: the run's request returns and its wait ends.
                    history.append("worker \(id) stops waiting for \(key)")
                    machine.reclaim(job, worker: id, awaiting: key)
                } else if worker.cancelled, let (claimID, key) = withdrawable(worker) {
                    // Its task was cancelled: each of its requests withdraws its claim (one being
                    // answered already is not withdrawn: its answer comes).
                    release(claimID, key: key)
                } else if worker.awaiting.isEmpty, !mayAsk || worker.cancelled || Int.random(in: 0 ..< 4, using: &random) > 0 {
                    finish(id, job)
                } else if mayAsk, !worker.cancelled, worker.awaiting.count < 3 {
                    ask(id, job)
                } else {
                    return false  // waiting for its requests
                }
            case .delivering(let job, let waiters, let result, let resumed):
                if !resumed {
                    history.append("worker \(id) resumes \(waiters.count) waiters of \(job.key)")
                    workers[id]?.state = .delivering(job, waiters, result, resumed: true)
                    for waiter in waiters { waiter.resume(with: result) }
                    takeAnswers()
                } else {
                    history.append("worker \(id) ends the delivery of \(job.key)")
                    follow(id, machine.endDelivery(of: job, worker: id))
                }
            }
            return true
        }

        mutating func finish(_ id: UInt64, _ job: Machine.Job) {
            let made = "\(job.key)#\(job.token)"
            let result: Result<String, any Error> = switch Int.random(in: 0 ..< 6, using: &random) {
            case 0: .failure(TestError(made))
            case 1 where workers[id]?.cancelled == true: .failure(CancellationError())
            default: .success(made)
            }
            history.append("worker \(id) returns \(job.key)#\(job.token)")
            let step = machine.finish(job, worker: id, result: result)
            if case .deliver(let waiters, let delivered) = step {
                let theirs = claims.filter { $0.value.key == job.key && $0.value.token == job.token && !$0.value.delivering }
                if workers[id]?.cancelled == true { fail("worker \(id), cancelled, delivered \(job.key)") }
                if waiters.count != theirs.count {
                    fail("\(job.key)#\(job.token) delivered to \(waiters.count) waiters; \(theirs.count) claims wait for it")
                }
                for claimID in theirs.keys { claims[claimID]?.delivering = true }
                workers[id]?.state = .delivering(job, waiters, delivered, resumed: false)
            } else {
                if workers[id]?.cancelled != true { fail("worker \(id) returned \(job.key) and delivered nothing") }
                follow(id, step)
            }
        }

        /// `worker`'s run asks the processor for a key, as a request from inside its work does.
        mutating func ask(_ id: UInt64, _ job: Machine.Job) {
            let key = Int.random(in: 0 ..< keys, using: &random)
            guard !machine.wouldWaitForItself(job, worker: id, on: key) else {
                history.append("worker \(id) asking for \(key) is refused: a cycle")
                return
            }
            let priority = LoadPriority.allCases.randomElement(using: &random) ?? .visible
            let claimID = claim(key, priority: priority, asker: id)
            workers[id]?.awaiting[claimID] = key
            spawned(machine.lend(job, worker: id, awaiting: key))
        }

        mutating func follow(_ id: UInt64, _ step: Machine.WorkerStep) {
            switch step {
            case .run(let job, let level):
                history.append("worker \(id) runs \(job.key)#\(job.token) at \(level)")
                admitted(job, level: level, by: id)
                workers[id]?.state = .running(job)
            case .deliver:
                fail("worker \(id) was told to deliver outside a return")
            case .exit(let replacement):
                history.append("worker \(id) exits\(replacement.map { ", worker \($0) replaces it" } ?? "")")
                if let left = workers[id], !left.awaiting.isEmpty { fail("worker \(id) exits with requests unanswered") }
                workers[id] = nil
                spawned(replacement)
            }
        }

        mutating func spawned(_ worker: UInt64?) {
            guard let worker else { return }
            history.append("worker \(worker) spawned")
            if workers[worker] != nil { fail("worker \(worker) spawned twice") }
            workers[worker] = Worker()
            if workers.count - lenders > maxConcurrent {
                fail("\(workers.count) workers, \(lenders) lending: more than \(maxConcurrent)")
            }
        }

        mutating func cancelled(_ worker: UInt64) {
            guard workers[worker] != nil else { return fail("cancelled worker \(worker) does not exist") }
            workers[worker]?.cancelled = true
        }

        /// Workers whose current run waits for claims of its own: their slot is lent.
        var lenders: Int { workers.values.count(where: isLending) }

        /// Whether `worker`'s run, live, waits for claims it made (or has not yet taken an ended
        /// wait back): it lends its slot meanwhile.
        func isLending(_ worker: Worker) -> Bool {
            guard !worker.cancelled, case .running = worker.state else { return false }
            return !worker.awaiting.isEmpty || !worker.ended.isEmpty
        }

        /// The highest priority among the claims on `key` that are not answered yet.
        func highestClaim(on key: Int) -> LoadPriority? {
            claims.values.filter { $0.key == key && !$0.delivering }.map(\.priority).max()
        }

        mutating func admitted(_ job: Machine.Job, level: LoadPriority, by id: UInt64) {
            guard let wanted = highestClaim(on: job.key) else { return fail("\(job.key) runs with no claim waiting for it") }
            if wanted != level { fail("\(job.key) runs at \(level); its highest claim is \(wanted)") }
            if claims.values.contains(where: { $0.key == job.key && !$0.delivering && $0.token != job.token }) {
                fail("\(job.key)#\(job.token) runs while claims wait for another run of it")
            }
            for (other, worker) in workers where other != id && !worker.cancelled {
                if case .running(let running) = worker.state, running.key == job.key {
                    fail("\(job.key) runs on workers \(id) and \(other) at once")
                }
            }
            let queued = (0 ..< keys).filter { machine.state(for: $0) == .queued && $0 != job.key }
            if let place = places[job.key], let earlier = queued.first(where: { key in
                guard let other = places[key], other.level == level else { return false }
                return other.since < place.since
            }) {
                fail("\(job.key) was given at \(level) before \(earlier), queued there earlier")
            }
            if level != .visible, let skipped = queued.first(where: { highestClaim(on: $0) == .visible }) {
                fail("\(job.key) was given at \(level) while \(skipped) waits at .visible")
            }
            if level != .visible {
                let prefetching = self.prefetching
                if prefetching.count > machine.prefetchBudget {
                    fail("\(prefetching.count) runs below .visible, over their share of \(machine.prefetchBudget)")
                }
            }
        }

        // MARK: Answers

        mutating func takeAnswers() {
            let taken = answers.withLock { answers in
                defer { answers = [] }
                return answers
            }
            for (id, outcome) in taken {
                guard let claim = claims.removeValue(forKey: id) else {
                    fail("claim \(id) answered \(answered[id] != nil ? "twice" : "without being made"): \(outcome)")
                    continue
                }
                history.append("claim \(id) on \(claim.key): \(outcome)")
                answered[id] = claim.key
                let made = "\(claim.key)#\(claim.token)"
                if outcome != "value \(made)", outcome != "failure \(made)", outcome != "cancelled" {
                    fail("claim \(id) on \(claim.key), of run \(made), was answered \(outcome)")
                }
                if let asker = claim.asker, workers[asker]?.awaiting.removeValue(forKey: id) != nil {
                    workers[asker]?.ended.append(claim.key)
                }
            }
        }

        // MARK: Checks

        mutating func check() {
            // A queued run takes a new token when its priority changes: its claims follow it.
            for key in 0 ..< keys where machine.state(for: key) == .queued {
                guard let token = machine.runs[key]?.token else { continue }
                for (id, claim) in claims where claim.key == key && !claim.delivering { claims[id]?.token = token }
            }
            let sizes = machine.tableSizes
            let waiting = claims.values.filter { !$0.delivering }
            if sizes.waiters != waiting.count { fail("the machine holds \(sizes.waiters) waiters; \(waiting.count) claims wait") }
            if sizes.workers != workers.count { fail("the machine holds \(sizes.workers) workers; \(workers.count) run") }
            for key in 0 ..< keys {
                let state = machine.state(for: key)
                let claimed = waiting.contains { $0.key == key }
                if claimed != (state == .queued || state == .running) {
                    fail("\(key) is \(state) with \(claimed ? "claims" : "no claim") waiting")
                }
            }
            // Stranded work: something is queued, yet every worker waits for answers (or none exists).
            let queued = (0 ..< keys).filter { machine.state(for: $0) == .queued }
            // Each queued run's place: a new run, or a new priority, goes to the back.
            events += 1
            for key in 0 ..< keys {
                guard queued.contains(key), let level = highestClaim(on: key), let token = machine.runs[key]?.token else {
                    places[key] = nil
                    continue
                }
                if let place = places[key], place.level == level, place.token == token { continue }
                places[key] = (level, token, events)
            }
            if let key = queued.first, !workers.values.contains(where: canProceed) {
                fail("\(key) is queued and no worker will come for it (\(workers.count) workers, all waiting)")
            }
            // Idle slots: work that may start now does not wait for work that is running to return.
            let free = maxConcurrent - (workers.count - lenders)
            let coming = workers.values.count { worker in
                if case .running = worker.state { return false }
                return true  // starting, or delivering: it asks for work next
            }
            let visible = queued.count { highestClaim(on: $0) == .visible }
            if min(visible, free) > coming {
                fail("\(visible) keys wait at .visible with \(free) worker slots free and \(coming) workers coming")
            }
            if visible == 0, let key = queued.first, free > 0, coming == 0, prefetching.count < machine.prefetchBudget {
                fail("\(key) waits at \(highestClaim(on: key).map(String.init(describing:)) ?? "?") with \(free) worker slots free, \(prefetching.count) of \(machine.prefetchBudget) prefetch slots taken, and no worker coming")
            }
        }

        /// Keys whose work runs below `.visible` on a worker that does not lend its slot: what the
        /// prefetch share holds.
        var prefetching: [Int] {
            (0 ..< keys).filter { key in
                guard machine.state(for: key) == .running, let wanted = highestClaim(on: key), wanted != .visible else { return false }
                return !workers.values.contains { worker in
                    guard case .running(let job) = worker.state, job.key == key else { return false }
                    return isLending(worker)
                }
            }
        }

        /// Whether `worker` has a step to take now, rather than waiting for answers.
        func canProceed(_ worker: Worker) -> Bool {
            guard case .running = worker.state else { return true }
            return worker.awaiting.isEmpty || !worker.ended.isEmpty || (worker.cancelled && withdrawable(worker) != nil)
        }

        /// A request of `worker`'s whose claim can still be withdrawn: not answered, nor being answered.
        func withdrawable(_ worker: Worker) -> (UInt64, Int)? {
            worker.awaiting.sorted { $0.key < $1.key }.first { claims[$0.key]?.delivering == false }.map { ($0.key, $0.value) }
        }

        /// Runs the workers, asking nothing more, until none is left.
        mutating func drain() {
            history.append("drain")
            var steps = 0
            while failure == nil, steps < 100_000 {
                steps += 1
                let ready = workers.filter { canProceed($0.value) }.keys.sorted()
                guard let id = ready.randomElement(using: &random) else { break }
                stepWorker(id, mayAsk: false)
                check()
            }
            guard failure == nil else { return }
            if !workers.isEmpty { return fail("\(workers.count) workers never ended") }
            if let (id, claim) = claims.min(by: { $0.key < $1.key }) {
                return fail("claim \(id) on \(claim.key) was never answered")
            }
            if !machine.tableSizes.isIdle { fail("drained, the machine still holds \(machine.tableSizes)") }
        }
    }
}
