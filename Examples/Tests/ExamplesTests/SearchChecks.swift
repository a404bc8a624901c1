import Testing
import TerminalUI

/// Starts `rounds` searches with `search`, each of which ends at once, awaits each outcome through
/// the model's `poll()`, and checks that it is `expected` and that no search is left shown as running
/// or found by Esc to cancel. (A search could end before it was recorded as the running one; the
/// record then stayed: "searching…" beside "not found".)
func expectSearchesEndingAtOnceLeaveNoneRunning(
    _ model: some ListModel, rounds: Int, selected: Int, outcome expected: String, search: () -> Void,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    for round in 0 ..< rounds {
        search()
        var outcome: String?
        while outcome == nil {  // the suite's time limit ends a wait that never does
            if case .message(let message) = model.poll() { outcome = message } else { await Task.yield() }
        }
        #expect(outcome == expected, sourceLocation: sourceLocation)
        let fields = model.statusFields
        if fields.contains(where: { $0.hasPrefix("searching") }) {
            Issue.record("round \(round): a search still shown as running: \(fields)", sourceLocation: sourceLocation)
            return
        }
        if case .message(let message) = model.handle(.escape, selected: selected) {
            Issue.record("round \(round): Esc found a search to cancel: \(message)", sourceLocation: sourceLocation)
            return
        }
    }
}
