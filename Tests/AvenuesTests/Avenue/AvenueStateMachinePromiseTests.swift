import Foundation
import Testing
import AvenuesTestSupport
@testable import Avenues

/// ``AvenueStateMachine`` driven directly by seeded random events — prepares at any priority, claims
/// attached late, releases, cancels, completions that succeed, fail (for a while, for good, offline)
/// or are cancelled, retries, the clock moving — with its promises checked after every event, no
/// thread or lock involved. `AvenuePropertyTests` checks the same promises through `Avenue`; here
/// a seed explores far more orders of events in the same time.
@Suite("Avenue state machine promises")
struct AvenueStateMachinePromiseTests {
    /// Rows, keys, values and claims are integers.
    typealias Machine = AvenueStateMachine<Int, Int, Int, Int>

    struct Failed: Error {}
    struct Permanent: PermanentError { var isPermanent: Bool { true } }

    /// What the test knows besides the machine: the storage, the claims the processor made, and the
    /// loads started whose claim is not attached yet (it is made after the lock).
    struct World {
        var machine = Machine()
        var stored: [Int: StoredValue<Int>] = [:]
        var unattached: [(key: Int, loadID: UInt64, priority: LoadPriority)] = []
        /// Claims made and not ended (released, or consumed by their load's completion).
        var liveClaims: Set<Int> = []
        var nextClaim = 0
        var now = ContinuousClock.now
        var lastTicket: UInt64 = 0
    }

    @Test(arguments: 0 ..< 12)
    func theMachineKeepsItsPromisesUnderRandomEvents(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var world = World()
        let rows = 12, keys = 8
        for step in 0 ..< 4_000 {
            let event = Int.random(in: 0 ..< 100, using: &random)
            var log = ""
            switch event {
            case 0 ..< 35:  // a row is prepared
                let index = Int.random(in: 0 ..< rows, using: &random)
                let key = Int.random(in: 0 ..< keys, using: &random)
                let priority = [LoadPriority.visible, .prefetch, .background].randomElement(using: &random) ?? .visible
                let force = Int.random(in: 0 ..< 20, using: &random) == 0
                // Sometimes storage was read before the last completion took the lock.
                let staleRead = world.machine.storeEpoch > 0 && Int.random(in: 0 ..< 8, using: &random) == 0
                log = "prepare \(key) at \(index) \(priority)\(force ? " forced" : "")\(staleRead ? " after a stale miss" : "")"
                prepare(key, at: index, priority: priority, force: force, staleRead: staleRead, in: &world, random: &random, step: step)
            case 35 ..< 50:  // a claim made after the lock is attached
                guard !world.unattached.isEmpty else { continue }
                let start = world.unattached.remove(at: Int.random(in: 0 ..< world.unattached.count, using: &random))
                let claim = world.nextClaim
                world.nextClaim += 1
                world.liveClaims.insert(claim)
                log = "attach claim \(claim) to \(start.key) load \(start.loadID)"
                let effects = world.machine.attach(claim, to: start.key, loadID: start.loadID, askedAt: start.priority)
                apply(effects, to: &world, step: step, log)
            case 50 ..< 60:  // a row is let go
                let index = Int.random(in: 0 ..< rows, using: &random)
                log = "release \(index)"
                apply(world.machine.release(index), to: &world, step: step, log)
                #expect(world.machine.rows[index] == nil, "step \(step): \(log)")
            case 60 ..< 63:  // a key is cancelled for everyone
                let key = Int.random(in: 0 ..< keys, using: &random)
                log = "cancel load of \(key)"
                apply(world.machine.cancelLoad(of: key), to: &world, step: step, log)
                #expect(world.machine.loads[key] == nil, "step \(step): \(log)")
            case 63 ..< 88:  // a load ends
                // From the keys in order: a dictionary's order changes from one process to the next,
                // and a seed must replay.
                guard let key = world.machine.loads.keys.sorted().randomElement(using: &random), let load = world.machine.loads[key] else { continue }
                let outcome: Machine.Outcome
                switch Int.random(in: 0 ..< 10, using: &random) {
                case 0 ..< 5:
                    outcome = .loaded
                    world.stored[key] = StoredValue(step)
                case 5: outcome = .cancelled
                case 6: outcome = .failed(Permanent())
                case 7: outcome = .failed(URLError(.notConnectedToInternet))
                default: outcome = .failed(Failed())
                }
                log = "complete \(key) load \(load.id): \(outcome)"
                let waiting = Dictionary(load.rows.map { ($0.index, $0.priority) }, uniquingKeysWith: { first, _ in first })
                let tickets = Dictionary(uniqueKeysWithValues: waiting.keys.compactMap { index in world.machine.rows[index].map { (index, $0.ticket) } })
                let completion = world.machine.complete(key, loadID: load.id, outcome: outcome, value: step, now: world.now, random: 0.5)
                // The claim is the processor's to end with the completion.
                // (A claim not attached yet is released when it is: its load ended.)
                if let claim = load.claim { world.liveClaims.remove(claim) }
                #expect(Set(completion.deliveries.map(\.index)) == Set(waiting.keys), "step \(step): \(log): every row waiting is told, once")
                #expect(completion.deliveries.count == waiting.count, "step \(step): \(log)")
                for delivery in completion.deliveries {
                    #expect(delivery.ticket == tickets[delivery.index], "step \(step): \(log): row \(delivery.index) told with another ticket")
                    #expect(world.machine.isCurrent(delivery.index, ticket: delivery.ticket), "step \(step): \(log)")
                    guard let row = world.machine.rows[delivery.index] else { continue }
                    switch (outcome, row.phase) {
                    case (.loaded, .settled), (.cancelled, .settled), (.failed, .failed): break
                    default: Issue.record("step \(step): \(log): row \(delivery.index) is \(row.phase) after \(outcome)")
                    }
                    #expect(row.phase.priority == waiting[delivery.index], "step \(step): \(log): a row's priority changed")
                }
            case 88 ..< 93:  // the avenue retries the failed visible rows whose wait is over
                log = "due retries"
                for (index, key) in world.machine.dueRetries(now: world.now).sorted(by: { $0.index < $1.index }) {
                    // An earlier retry of this turn may have become the probe after an offline wait,
                    // which holds the others back again.
                    prepare(key, at: index, priority: .visible, force: false, in: &world, random: &random, step: step)
                }
            case 93 ..< 95:  // a value is evicted, or goes stale
                let key = Int.random(in: 0 ..< keys, using: &random)
                if Bool.random(using: &random) { world.stored[key] = nil } else { world.stored[key]?.isStale = true }
                continue
            default:  // time passes
                world.now = world.now.advanced(by: .milliseconds(Int.random(in: 0 ... 40_000, using: &random)))
                log = "time passes"
            }
            check(world, rows: rows, step: step, after: log)
        }
        // Letting go of everything ends every claim and every load.
        apply(world.machine.releaseAll(), to: &world, step: -1, "release all")
        for start in world.unattached {
            let claim = world.nextClaim
            world.nextClaim += 1
            world.liveClaims.insert(claim)
            apply(world.machine.attach(claim, to: start.key, loadID: start.loadID, askedAt: start.priority), to: &world, step: -1, "attach after release all")
        }
        #expect(world.liveClaims.isEmpty, "claims never released: \(world.liveClaims.sorted())")
        #expect(world.machine.loads.isEmpty && world.machine.rows.count == 0 && world.machine.failedVisible.isEmpty)
        #expect(world.machine.nextRetry(now: world.now) == nil)
        let statistics = world.machine.statistics
        #expect(statistics.loadsStarted == statistics.loadsCompleted + statistics.loadsFailed + statistics.loadsCancelled)
    }

    /// Prepares `key` at `index` as `Avenue` does: storage read first (sometimes read before a
    /// completion moved the epoch: read again), the processor asked when the offline wait would
    /// hold the key back.
    func prepare(
        _ key: Int, at index: Int, priority: LoadPriority, force: Bool, staleRead: Bool = false,
        in world: inout World, random: inout SplitMix64, step: Int
    ) {
        let before = world.machine.rows[index]
        let loadBefore = world.machine.loads[key]?.id
        var availableOffline: Bool?
        var outcome: Machine.PrepareOutcome
        if staleRead {
            // A miss read at the epoch before: the value may have come since. Unless the key is
            // loading (the row joins the load), the machine must send the caller to read again.
            outcome = world.machine.prepare(key, at: index, priority: priority, found: nil, epoch: world.machine.storeEpoch &- 1, now: world.now, force: force)
            switch outcome {
            case .retry:
                #expect(world.machine.loads[key] == nil, "step \(step): a stale miss of a loading key was sent to read again")
                #expect(world.machine.rows[index]?.ticket == before?.ticket, "step \(step): a prepare sent to read again changed the row")
                outcome = world.machine.prepare(
                    key, at: index, priority: priority, found: world.stored[key], epoch: world.machine.storeEpoch, now: world.now, force: force
                )
            case .done where world.machine.loads[key] == nil && loadBefore == nil:
                Issue.record("step \(step): a stale miss of \(key) was taken as a miss")
            default:
                break
            }
        } else {
            outcome = world.machine.prepare(
                key, at: index, priority: priority, found: world.stored[key], epoch: world.machine.storeEpoch, now: world.now, force: force
            )
        }
        var effects: Machine.Effects?
        for _ in 0 ..< 3 {
            switch outcome {
            case .retry:
                Issue.record("step \(step): a read at the current epoch was sent to read again")
            case .askOffline:
                #expect(availableOffline == nil, "step \(step): asked twice whether the processor has \(key) offline")
                availableOffline = Bool.random(using: &random)
                outcome = world.machine.prepare(
                    key, at: index, priority: priority, found: world.stored[key], epoch: world.machine.storeEpoch, now: world.now,
                    force: force, availableOffline: availableOffline
                )
                continue
            case .done(let done):
                effects = done
            }
            break
        }
        guard let effects else {
            Issue.record("step \(step): prepare \(key) at \(index) never ended")
            return
        }
        let log = "prepare \(key) at \(index) \(priority)"
        apply(effects, to: &world, step: step, log)
        guard let row = world.machine.rows[index] else {
            Issue.record("step \(step): \(log): the row is gone")
            return
        }
        #expect(row.key == key && row.phase.priority == priority, "step \(step): \(log): row is \(row.key) at \(row.phase.priority)")
        // A row moved to another key, or prepared anew, has a ticket no event made before carries.
        if before?.key != key || before?.ticket != row.ticket {
            #expect(row.ticket > world.lastTicket, "step \(step): \(log): a ticket was handed out again")
        }
        world.lastTicket = max(world.lastTicket, row.ticket)
        let fresh = world.stored[key].map { !$0.isStale } ?? false
        if let start = effects.start {
            #expect(start.key == key && loadBefore == nil && !fresh, "step \(step): \(log): a load started for \(start.key)")
            #expect(world.machine.loads[key]?.id == start.loadID, "step \(step): \(log)")
            world.unattached.append(start)
        }
        switch row.phase {
        case .settled:
            #expect(fresh, "step \(step): \(log): settled with nothing fresh stored")
        case .waiting:
            #expect(world.machine.loads[key] != nil, "step \(step): \(log): waiting for no load")
        case .failed:
            #expect(!fresh && world.machine.loads[key] == nil, "step \(step): \(log): failed while its key is stored or loading (before: \(String(describing: before?.phase)), failure \(String(describing: world.machine.failures[key])), offline \(String(describing: world.machine.offline)), load local \(String(describing: world.machine.loads[key]?.local)))")
            #expect(!force, "step \(step): \(log): an explicit retry was held back")
        }
        if !fresh, world.machine.blockingFailure(of: key, now: world.now) == nil || force {
            if case .waiting = row.phase {} else { Issue.record("step \(step): \(log): nothing holds \(key) back, yet the row is \(row.phase)") }
        }
    }

    /// Carries out the processor calls a step asks for, checking that each is one a processor can take.
    func apply(_ effects: Machine.Effects, to world: inout World, step: Int, _ log: String) {
        for claim in effects.release {
            #expect(world.liveClaims.remove(claim) != nil, "step \(step): \(log): claim \(claim) released but not live")
            #expect(!world.machine.loads.values.contains { $0.claim == claim }, "step \(step): \(log): claim \(claim) released while its load goes on")
        }
        for change in effects.reprioritize {
            let load = world.machine.loads[change.key]
            #expect(load?.id == change.loadID && load?.claim == change.claim, "step \(step): \(log): a claim of no live load reprioritized")
            #expect(world.machine.claimedPriority(of: change.key, loadID: change.loadID) != nil, "step \(step): \(log)")
        }
    }

    /// The promises that hold between any two events.
    func check(_ world: World, rows: Int, step: Int, after log: String) {
        let machine = world.machine
        let entries = (0 ..< rows).compactMap { index in machine.rows[index].map { (index, $0) } }
        #expect(machine.rows.count == entries.count, "step \(step) (\(log)): the table counts \(machine.rows.count) rows, holds \(entries.count)")
        var waitingRows = 0
        for (index, row) in entries {
            if case .waiting(let priority) = row.phase {
                waitingRows += 1
                let load = machine.loads[row.key]
                let entries = load?.rows.filter { $0.index == index } ?? []
                #expect(entries.count == 1 && entries.first?.priority == priority,
                        "step \(step) (\(log)): row \(index) waits for \(row.key), whose load lists it \(entries.count) times")
            } else if let load = machine.loads[row.key], load.rows.contains(where: { $0.index == index }) {
                Issue.record("step \(step) (\(log)): row \(index) is \(row.phase) yet listed by the load of \(row.key)")
            }
            #expect(row.ticket <= world.lastTicket, "step \(step) (\(log)): a ticket from nowhere")
            // A value is pinned only while the row is visible (it keeps showing it when evicted).
            #expect(row.pin == nil || row.phase.priority == .visible, "step \(step) (\(log)): row \(index) at \(row.phase.priority) pins a value")
        }
        #expect(machine.loads.values.reduce(0) { $0 + $1.rows.count } == waitingRows, "step \(step) (\(log)): loads list rows not waiting")
        for (key, load) in machine.loads {
            #expect(!load.rows.isEmpty, "step \(step) (\(log)): the load of \(key) has no row")
            #expect(load.claimed == load.wanted, "step \(step) (\(log)): the load of \(key) is claimed at \(load.claimed), its rows want \(load.wanted)")
            for entry in load.rows {
                #expect(machine.rows[entry.index]?.key == key, "step \(step) (\(log)): the load of \(key) lists row \(entry.index), which shows another key")
            }
            if let claim = load.claim {
                #expect(world.liveClaims.contains(claim), "step \(step) (\(log)): the load of \(key) holds a claim that ended")
            } else {
                #expect(world.unattached.contains { $0.key == key && $0.loadID == load.id }, "step \(step) (\(log)): the load of \(key) will never get its claim")
            }
        }
        // Every live claim belongs to a live load: none leaks.
        let held = Set(machine.loads.values.compactMap(\.claim))
        #expect(world.liveClaims == held, "step \(step) (\(log)): claims live \(world.liveClaims.sorted()), held \(held.sorted())")
        let failedVisible = Dictionary(uniqueKeysWithValues: entries.compactMap { index, row -> (Int, Int)? in
            if case .failed(_, .visible) = row.phase { return (index, row.key) }
            return nil
        })
        #expect(machine.failedVisible == failedVisible, "step \(step) (\(log)): failed visible rows \(machine.failedVisible) against \(failedVisible)")
        let statistics = machine.statistics
        #expect(statistics.loadsInFlight == machine.loads.count, "step \(step) (\(log)): loads counted \(statistics)")
        // The avenue's retry timer: armed for now or earlier exactly when a failed visible row is due.
        let due = !machine.dueRetries(now: world.now).isEmpty
        let armed = machine.nextRetry(now: world.now).map { $0 <= world.now } ?? false
        #expect(due == armed, "step \(step) (\(log)): retries due \(due), the timer armed for now \(armed)")
    }
}
