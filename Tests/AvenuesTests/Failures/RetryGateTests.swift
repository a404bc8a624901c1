import Foundation
import Testing
@testable import Avenues

@Suite("RetryGate")
struct RetryGateTests {
    /// A hostile server answering 429 with `Retry-After: 3600` for every URL of a long list grew the
    /// table of keys told to wait without bound (its expired entries were dropped, and none had
    /// expired), and every note past 1,024 filtered the whole table under its lock: quadratic. The
    /// table now keeps the keys that wait longest; one dropped early is asked again, and told to
    /// wait again.
    @Test func aServerThatAsksEveryKeyToWaitKeepsTheTableBounded() {
        let start = ContinuousClock.now
        let now = Shared(start)
        let gate = RetryGate<Int>(now: { now.value })
        for key in 0..<5_000 {
            gate.note(Throttled(retryAfter: .seconds(3_600)), for: key)
            now.withLock { $0 = $0.advanced(by: .milliseconds(1)) }
        }
        #expect(gate.closed.withLock { $0.count } <= RetryGate<Int>.limit)
        #expect(gate.blocked(4_999) != nil, "the newest wait is kept")
        #expect(gate.blocked(0) == nil, "the oldest went first")
        // A key told to wait longer outlasts many shorter ones noted after it.
        gate.note(Throttled(retryAfter: .seconds(3_600 * 2)), for: -1)
        for key in 5_000..<8_000 { gate.note(Throttled(retryAfter: .seconds(60)), for: key) }
        #expect(gate.blocked(-1) != nil)
        #expect(gate.closed.withLock { $0.count } <= RetryGate<Int>.limit)
        // Waits over are dropped as before.
        now.withLock { $0 = $0.advanced(by: .seconds(3_600 * 3)) }
        #expect(gate.blocked(-1) == nil)
    }
}
