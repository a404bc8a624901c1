import Testing

/// Waits until `condition` holds, re-checking as other tasks make progress. Used only for states
/// with no event to await (a worker leaving after its last job); the deadline turns a bug into a
/// failure instead of a hang, it is not a guess at how long work takes.
func eventually(
    _ what: Comment,
    deadline: Duration = .seconds(30),
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
