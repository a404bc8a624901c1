import Dispatch
import Synchronization
import Testing
@testable import Avenues

/// `SerialDrain`: the one "pending + flag + drain loop" that ``Avenue``'s deliveries,
/// ``RowPrefetcher``'s windows and ``PagedRows``' windows and details share.
@Suite("Serial drain")
struct SerialDrainTests {
    @Test func aSubmitFromInsideADrainIsCarriedOutByTheOuterDrainAfterItsBatch() {
        let drain = SerialDrain<[Int]>()
        let log = Shared<[String]>([])
        func submit(_ value: Int) {
            drain.submit({ pending in
                var all = pending.take() ?? []
                all.append(value)
                pending = all
            }, drain: { batch in
                log.withLock { $0.append("begin \(batch)") }
                // A callback that re-enters: its addition waits for this batch to end.
                if batch == [1] { submit(2); submit(3) }
                log.withLock { $0.append("end \(batch)") }
            })
        }
        submit(1)
        #expect(log.withLock { $0 } == ["begin [1]", "end [1]", "begin [2, 3]", "end [2, 3]"])
        #expect(!drain.isBusy)
    }

    @Test func theMergeSaysWhetherTheNewestWinsOrAdditionsPileUp() {
        let drain = SerialDrain<String>()
        let drained = Shared<[String]>([])
        func submit(_ request: String) {
            drain.submit({ pending in
                // As RowPrefetcher's: a "replan" never replaces a pending show.
                if request == "replan", pending != nil {} else { pending = request }
            }, drain: { request in
                drained.withLock { $0.append(request) }
                if request == "show 1" { submit("show 2"); submit("replan"); submit("show 3"); submit("replan") }
            })
        }
        submit("show 1")
        #expect(drained.withLock { $0 } == ["show 1", "show 3"])
    }

    /// Many threads at once: every addition is drained exactly once, and never two drains at a time.
    @Test func underContentionEveryAdditionIsDrainedOnceAndDrainsNeverOverlap() {
        let drain = SerialDrain<Int>()
        let total = Atomic<Int>(0)
        let draining = Atomic<Int>(0)
        let overlapped = Atomic<Bool>(false)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0 ..< 2_000 {
                drain.submit({ pending in pending = (pending ?? 0) + 1 }, drain: { count in
                    if draining.add(1, ordering: .acquiringAndReleasing).newValue != 1 { overlapped.store(true, ordering: .relaxed) }
                    total.add(count, ordering: .relaxed)
                    draining.subtract(1, ordering: .acquiringAndReleasing)
                })
            }
        }
        let (drained, overlaps) = (total.load(ordering: .relaxed), overlapped.load(ordering: .relaxed))
        #expect(drained == 16_000)
        #expect(!overlaps)
        #expect(!drain.isBusy)
    }
}
