import Foundation
import Testing
@testable import Avenues

/// ``AvenueStateMachine`` as a plain value: every interleaving below is one order of events, written
/// out, with no thread, lock or clock involved.
@Suite("Avenue state machine")
struct AvenueStateMachineTests {
    typealias Machine = AvenueStateMachine<Int, String, Int, Int>
    /// A fresh value found in storage.
    let fresh = StoredValue(1)
    let now = ContinuousClock.now

    /// The effects of a prepare that must not be retried.
    func done(_ outcome: Machine.PrepareOutcome, sourceLocation: SourceLocation = #_sourceLocation) -> Machine.Effects {
        guard case .done(let effects) = outcome else {
            Issue.record("prepare asked to read storage again", sourceLocation: sourceLocation)
            return Machine.Effects()
        }
        return effects
    }

    @Test func aMissReadBeforeALoadCompletedIsReadAgainInsteadOfStartingASecondLoad() throws {
        var machine = Machine()
        // Row 0 misses and starts the load of "k".
        let first = done(machine.prepare("k", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now))
        let loadID = try #require(first.start).loadID
        // Row 1 reads storage (a miss) at this epoch, then — before it takes the lock — the load
        // completes and stores the value.
        let epochOfRow1sRead = machine.storeEpoch
        let deliveries = machine.complete("k", loadID: loadID, outcome: .loaded, now: now).deliveries
        #expect(deliveries.map(\.index) == [0])
        // Its miss is outdated: the machine asks for the storage to be read again, not for a load.
        guard case .retry = machine.prepare("k", at: 1, priority: .visible, found: nil, epoch: epochOfRow1sRead, now: now) else {
            Issue.record("a stale miss started a second load")
            return
        }
        // Read again, the value is there: the row settles and nothing starts.
        let second = done(machine.prepare("k", at: 1, priority: .visible, found: fresh, epoch: machine.storeEpoch, now: now))
        #expect(second.start == nil)
        #expect(machine.statistics.loadsStarted == 1 && machine.statistics.cacheHits == 1)
    }

    /// The claim is made after the lock and attached when it returns; what happened to the load
    /// meanwhile is settled then.
    @Test func aClaimAttachedAfterTheLockFollowsWhatHappenedToItsLoadMeanwhile() throws {
        // Nothing happened: attached, nothing to do.
        var machine = Machine()
        var start = try #require(done(machine.prepare("k", at: 0, priority: .prefetch, found: nil, epoch: machine.storeEpoch, now: now)).start)
        let quiet = machine.attach(7, to: "k", loadID: start.loadID, askedAt: start.priority)
        #expect(quiet.release.isEmpty && quiet.reprioritize.isEmpty)
        #expect(machine.claimedPriority(of: "k", loadID: start.loadID) == .prefetch)
        // Raised to visible once attached: the claim follows at once.
        let raised = done(machine.prepare("k", at: 1, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now))
        #expect(raised.reprioritize.map(\.claim) == [7])
        #expect(machine.claimedPriority(of: "k", loadID: start.loadID) == .visible)

        // Raised while the claim was being made: no claim to change then; attaching asks for it.
        machine = Machine()
        start = try #require(done(machine.prepare("k", at: 0, priority: .prefetch, found: nil, epoch: machine.storeEpoch, now: now)).start)
        #expect(done(machine.prepare("k", at: 1, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now)).reprioritize.isEmpty)
        let late = machine.attach(8, to: "k", loadID: start.loadID, askedAt: start.priority)
        #expect(late.reprioritize.map(\.claim) == [8] && late.release.isEmpty)
        #expect(machine.claimedPriority(of: "k", loadID: start.loadID) == .visible)

        // Its only row released meanwhile: the load is gone, and so must the claim be.
        machine = Machine()
        start = try #require(done(machine.prepare("k", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now)).start)
        #expect(machine.release(0).release.isEmpty)  // no claim yet to release
        #expect(machine.attach(9, to: "k", loadID: start.loadID, askedAt: start.priority).release == [9])
        #expect(machine.claimedPriority(of: "k", loadID: start.loadID) == nil)

        // Its value arrived meanwhile (the worker was quick): the claim is spent; releasing it is harmless.
        machine = Machine()
        start = try #require(done(machine.prepare("k", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now)).start)
        #expect(machine.complete("k", loadID: start.loadID, outcome: .loaded, now: now).deliveries.map(\.index) == [0])
        #expect(machine.attach(10, to: "k", loadID: start.loadID, askedAt: start.priority).release == [10])

        // Released, then the key asked for again before the first claim returned: the first claim
        // goes, the new load keeps its own.
        machine = Machine()
        let first = try #require(done(machine.prepare("k", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now)).start)
        _ = machine.release(0)
        let second = try #require(done(machine.prepare("k", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now)).start)
        #expect(second.loadID != first.loadID)
        #expect(machine.attach(11, to: "k", loadID: first.loadID, askedAt: first.priority).release == [11])
        #expect(machine.attach(12, to: "k", loadID: second.loadID, askedAt: second.priority).release.isEmpty)
        #expect(machine.cancelLoad(of: "k").release == [12])
    }

    @Test func aMissWhileTheKeyIsLoadingJoinsTheLoadWhateverTheEpoch() {
        var machine = Machine()
        let first = done(machine.prepare("k", at: 0, priority: .prefetch, found: nil, epoch: machine.storeEpoch, now: now))
        #expect(first.start?.priority == .prefetch)
        // Another load completing moves the epoch; "k" is still loading, so row 1 joins it.
        let other = done(machine.prepare("other", at: 5, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now))
        _ = machine.complete("other", loadID: other.start?.loadID ?? 0, outcome: .loaded, now: now)
        let joined = done(machine.prepare("k", at: 1, priority: .visible, found: nil, epoch: 0, now: now))
        #expect(joined.start == nil)
        #expect(machine.loads["k"]?.rows.map(\.index) == [0, 1])
    }

    @Test func aDeliveryCarriesTheTicketOfTheRowItWasMadeFor() throws {
        var machine = Machine()
        let start = done(machine.prepare("a", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now)).start
        let deliveries = machine.complete("a", loadID: start?.loadID ?? 0, outcome: .loaded, now: now).deliveries
        let delivery = try #require(deliveries.first)
        #expect(machine.isCurrent(0, ticket: delivery.ticket))
        // The row moves to another key before the notification is handed out: it is no longer current,
        // so the row is never told "loaded" for a value it no longer shows.
        _ = machine.prepare("b", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now)
        #expect(!machine.isCurrent(0, ticket: delivery.ticket))
    }

    @Test func aRowCancelledAndPreparedAgainForTheSameKeyGetsANewTicket() {
        var machine = Machine()
        let start = done(machine.prepare("a", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now)).start
        let oldTicket = machine.rows[0]?.ticket ?? 0
        let released = machine.release(0)
        #expect(released.release.isEmpty)  // no claim was attached yet
        // Prepared again: a new load (the old one lost its last row) and a new ticket.
        let again = done(machine.prepare("a", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now))
        #expect(again.start != nil && again.start?.loadID != start?.loadID)
        #expect(!machine.isCurrent(0, ticket: oldTicket))
        // The first load's late completion is dropped: no delivery, the new load still waits.
        let late = machine.complete("a", loadID: start?.loadID ?? 0, outcome: .loaded, now: now)
        #expect(late.deliveries.isEmpty)
        #expect(machine.loads["a"] != nil)
    }

    @Test func aFailedKeyWaitsForItsRetryTimeUnlessForced() {
        var machine = Machine(retryPolicy: RetryPolicy(attempts: 3, base: .seconds(10), cap: .seconds(10), jitter: 0))
        struct Boom: Error {}
        let start = done(machine.prepare("k", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now)).start
        _ = machine.complete("k", loadID: start?.loadID ?? 0, outcome: .failed(Boom()), now: now)
        // Prepared again within the wait: nothing starts, nobody is told.
        #expect(done(machine.prepare("k", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now)).start == nil)
        // After the wait it loads again; a forced retry does not wait.
        #expect(done(machine.prepare("k", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now + .seconds(11))).start != nil)
        var other = Machine(retryPolicy: RetryPolicy(attempts: 3, base: .seconds(10), cap: .seconds(10), jitter: 0))
        let first = done(other.prepare("k", at: 0, priority: .visible, found: nil, epoch: 0, now: now)).start
        _ = other.complete("k", loadID: first?.loadID ?? 0, outcome: .failed(Boom()), now: now)
        #expect(done(other.prepare("k", at: 0, priority: .visible, found: nil, epoch: other.storeEpoch, now: now, force: true)).start != nil)
    }

    /// Found by `AvenueStateMachinePromiseTests` (2026-11-30): a failed row prepared again while its
    /// key loads for another row (here, the probe after an offline wait) stayed failed, because the
    /// wait still held the key. It was not in the load, so it was not told when the value came, and
    /// showed the error until its own retry. A row that never failed joined that load.
    @Test func aFailedRowPreparedWhileItsKeyLoadsForAnotherRowJoinsTheLoad() throws {
        var machine = Machine(retryPolicy: RetryPolicy(attempts: 3, base: .seconds(10), cap: .seconds(10), jitter: 0))
        let first = try #require(done(machine.prepare("k", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: now)).start)
        _ = machine.complete("k", loadID: first.loadID, outcome: .failed(URLError(.notConnectedToInternet)), now: now)
        #expect(machine.offline != nil)
        // After the offline wait, row 1 asks for the key: its load is the probe.
        let later = now + .seconds(11)
        let probe = try #require(done(machine.prepare("k", at: 1, priority: .visible, found: nil, epoch: machine.storeEpoch, now: later)).start)
        #expect(machine.offline?.probe == "k")
        // Row 0, failed, is drawn again meanwhile: it waits for the probe's value.
        let again = done(machine.prepare("k", at: 0, priority: .visible, found: nil, epoch: machine.storeEpoch, now: later))
        #expect(again.start == nil)
        guard case .waiting? = machine.rows[0]?.phase else {
            Issue.record("row 0 is \(String(describing: machine.rows[0]?.phase)) while its key loads")
            return
        }
        #expect(machine.failedVisible.isEmpty)
        let told = machine.complete("k", loadID: probe.loadID, outcome: .loaded, value: 1, now: later)
        #expect(Set(told.deliveries.map(\.index)) == [0, 1])
    }
}
