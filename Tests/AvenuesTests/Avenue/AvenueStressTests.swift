import Dispatch
import Testing
@testable import Avenues
import AvenuesTestSupport

/// 200,000 seeded operations from 8 tasks against one avenue, with an invariant checker.
///
/// Each task owns its own rows (so "after its cancel returned" is well defined per row) while all
/// tasks draw keys from one small pool, so loads are shared, joined, cancelled and raced across
/// tasks. The operation sequence is seeded; thread interleavings are whatever the machine does.
///
/// With callbacks on a serial queue, the tasks cancel on that queue, where the rule "no callback
/// about a row after its cancel returned" is exact, and the checker enforces it. With callbacks on
/// the completing thread, a callback another thread had already decided may still arrive (see
/// `Avenue.cancel(at:)`), so that mode checks everything else.
@Suite("Avenue stress", .timeLimit(.minutes(5)))
struct AvenueStressTests {
    static let tasks = 8
    static let rowsPerTask = 48
    static let operationsPerTask = 25_000  // 200,000 in all
    static let keyCount = 60

    static func expectedValue(_ key: Int) -> Int { key * 10 + 1 }
    static func alwaysFails(_ key: Int) -> Bool { key.isMultiple(of: 7) }

    struct StressFailure: Error {}

    enum Mode: String, CaseIterable, CustomTestStringConvertible {
        case completingThread, serialQueue
        var testDescription: String { rawValue }
    }

    @Test(arguments: Mode.allCases)
    func seededPrepareCancelReadReassignFromEightTasksKeepsEveryInvariant(mode: Mode) async throws {
        let processor = AutoProcessor(maxConcurrent: 4) { (key: Int) in
            for _ in 0..<(key % 4) { await Task.yield() }
            try Task.checkCancellation()
            if Self.alwaysFails(key) { throw StressFailure() }
            return Self.expectedValue(key)
        }
        let storage = MemoryStorage<Int, Int>()
        let queue = DispatchQueue(label: "stress")
        let callbackMode: CallbackMode = mode == .serialQueue ? .queue(queue) : .completingThread
        // One attempt: a failed visible row is not tried again by the avenue itself, so "every load
        // finished" is a state the avenue reaches (with the default policy its own retries of the
        // always-failing keys kept loads above zero for 30 s on a loaded CI machine).
        let avenue = Avenue<Int, Int, Int>(storage: storage, processor: processor, callbackMode: callbackMode, retryPolicy: RetryPolicy(attempts: 1))
        let cancelOnCallbackQueue = mode == .serialQueue
        let cancel: @Sendable (Int) -> Void = { row in
            if cancelOnCallbackQueue {
                queue.sync { avenue.cancel(at: row) }
            } else {
                avenue.cancel(at: row)
            }
        }

        /// Rows whose `cancel(at:)` has returned and that were not prepared since.
        let released = Shared(Set<Int>())
        let violations = Shared([String]())
        avenue.onStateChange = { row in
            if cancelOnCallbackQueue, released.withLock({ $0.contains(row) }) {
                violations.withLock { $0.append("row \(row) was told after its cancel returned") }
            }
        }
        avenue.onError = { error, row in
            if !(error is StressFailure) {
                violations.withLock { $0.append("row \(row) failed with an unexpected \(error)") }
            }
        }

        // Each task returns the key each of its rows is left claiming (nil: released).
        let claims: [[Int?]] = await withTaskGroup(of: (Int, [Int?]).self) { group in
            for task in 0..<Self.tasks {
                group.addTask {
                    var rng = SplitMix64(seed: 0xA7E_0000 + UInt64(task))
                    var assigned = [Int?](repeating: nil, count: Self.rowsPerTask)
                    let firstRow = task * Self.rowsPerTask
                    for _ in 0..<Self.operationsPerTask {
                        let slot = Int(rng.next() % UInt64(Self.rowsPerTask))
                        let row = firstRow + slot
                        switch rng.next() % 100 {
                        case 0..<40:  // prepare, or reassign when the row shows another key
                            let key = Int(rng.next() % UInt64(Self.keyCount))
                            released.withLock { _ = $0.remove(row) }
                            avenue.prepareItem(for: key, at: row, priority: rng.next() % 3 == 0 ? .prefetch : .visible)
                            assigned[slot] = key
                        case 40..<60:
                            cancel(row)
                            released.withLock { _ = $0.insert(row) }
                            assigned[slot] = nil
                        case 60..<63:
                            storage.removeValue(for: Int(rng.next() % UInt64(Self.keyCount)))  // eviction
                        default:  // read: a row only ever shows its own key's value
                            let key = avenue.key(at: row)
                            if key != assigned[slot] {
                                violations.withLock { $0.append("row \(row) is on key \(String(describing: key)), expected \(String(describing: assigned[slot]))") }
                            }
                            if let value = avenue.item(at: row), let expected = assigned[slot], value != Self.expectedValue(expected) {
                                violations.withLock { $0.append("row \(row) shows \(value) for key \(expected)") }
                            }
                            _ = avenue.state(at: row)
                        }
                    }
                    return (task, assigned)
                }
            }
            var byTask = [[Int?]](repeating: [], count: Self.tasks)
            for await (task, assigned) in group { byTask[task] = assigned }
            return byTask
        }

        await eventually("every load finished") {
            avenue.tableSizes.loads == 0 && processor.tableSizes.runs == 0
        }
        // A front end redraws what it still shows; evicted rows load again.
        for (task, rows) in claims.enumerated() {
            for (slot, key) in rows.enumerated() {
                if let key { avenue.prepareItem(for: key, at: task * Self.rowsPerTask + slot) }
            }
        }
        await eventually("the redraw's loads finished") {
            avenue.tableSizes.loads == 0 && processor.tableSizes.isIdle
        }

        var claimedRows = 0
        for (task, rows) in claims.enumerated() {
            for (slot, key) in rows.enumerated() {
                let row = task * Self.rowsPerTask + slot
                guard let key else {
                    #expect(avenue.key(at: row) == nil)
                    continue
                }
                claimedRows += 1
                let state = avenue.state(at: row)
                if Self.alwaysFails(key) {
                    #expect(state.error is StressFailure, "row \(row) on key \(key) is \(state)")
                } else {
                    #expect(state.isLoaded, "row \(row) on key \(key) is \(state)")
                    #expect(avenue.item(at: row) == Self.expectedValue(key))
                }
            }
        }
        // No claim leaks: nothing in flight anywhere, and exactly the claimed rows are assigned.
        #expect(avenue.tableSizes == AvenueTableSizes(rows: claimedRows, loads: 0))
        #expect(violations.withLock { $0 } == [])
        let statistics = avenue.statistics
        #expect(statistics.loadsInFlight == 0)
        #expect(statistics.loadsStarted > 1_000, "the stress did not exercise loading: \(statistics)")
        #expect(statistics.loadsCancelled > 100, "the stress did not exercise cancellation: \(statistics)")
    }
}
