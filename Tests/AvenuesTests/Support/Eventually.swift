import Foundation
import Testing

/// Waits until `condition` holds, re-checking as other tasks make progress. Used only for states
/// with no event to await (a worker leaving after its last job); the deadline turns a bug into a
/// failure instead of a hang, it is not a guess at how long work takes.
///
/// 240 s: in a full parallel run on two cores every test waits its turn on the pool's two threads
/// behind hundreds of others, and tests that take 1–2 s alone took 80–136 s there (2026-11-28);
/// waits of 30 s timed out in such runs with their work merely not yet run. Below the suites' time
/// limit of 5 minutes, so a wait that never ends is reported as this wait.
func eventually(
    _ what: Comment,
    deadline: Duration = .seconds(240),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async -> Bool
) async {
    let clock = ContinuousClock()
    let end = clock.now.advanced(by: deadline)
    var spins = 0
    while !(await condition()) {
        if clock.now > end {
            Issue.record("Timed out waiting until \(what)", sourceLocation: sourceLocation)
            return
        }
        spins += 1
        if spins < 1_000 {
            await Task.yield()
        } else {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }
}

/// Runs blocking `body` (reading a child's pipe, waiting for it to exit) on a thread of its own, so
/// it does not hold one of the few cooperative threads every other test's tasks need: a test that
/// blocks one for half a minute under ThreadSanitizer starves the rest of the suite. Keep
/// expectations outside `body` (they need the test's task).
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// ``onOwnThread(_:)`` for a body that does not throw.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}
