import Foundation
import Testing

/// Waits until `condition` holds, re-checking as other tasks make progress. Used only for states
/// with no event to await (a worker leaving after its last job); the deadline turns a bug into a
/// failure instead of a hang, it is not a guess at how long work takes.
///
/// 90 s: a full run on two cores has stretches of 12–20 s in which tests that keep the pool's two
/// threads busy starve every other task, and waits of 30 s timed out in them (the AsyncMedia list
/// tests, 3 of 5 full runs on 2026-11-28, with their downloads merely not yet run).
func eventually(
    _ what: Comment,
    deadline: Duration = .seconds(90),
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
