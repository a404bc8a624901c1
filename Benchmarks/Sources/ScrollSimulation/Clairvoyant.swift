/// The clairvoyant bound: a scheduler that knows the whole script and every work's latency in
/// advance. With the same `maxConcurrent` workers it starts exactly the rows that will be shown with
/// their value, in the order they are first needed, each on the first worker free (from time zero:
/// nothing is ever too early), skipping rows it could not load before they leave the screen for the
/// last time, and never wastes a run. Not a proven optimum — reordering by deadline and latency
/// could sometimes do better — but the practical bound a prefetcher aims at.
///
/// It is computed, not simulated: finish times follow from the schedule, and the frames are then
/// scored exactly as ``simulate(_:script:maxConcurrent:reservedForVisible:latency:)`` scores them.
public func clairvoyant(_ script: UserScript, latency: WorkLatency, maxConcurrent: Int) -> SimulationResult {
    // The rows shown, in the order first needed, and the last frame each is on screen.
    var firstNeeded: [Int: Int] = [:]
    var lastShown: [Int: Int] = [:]
    var order: [Int] = []
    for (frame, top) in script.tops.enumerated() {
        for row in top..<min(script.rows, top + script.viewport) {
            if firstNeeded[row] == nil {
                firstNeeded[row] = frame
                order.append(row)
            }
            lastShown[row] = frame
        }
    }
    // List scheduling: each row on the worker that is free first — unless it could not land before
    // the row leaves the screen for the last time (a row a fling passes): that run would show nothing.
    var free = [Duration](repeating: .zero, count: max(1, maxConcurrent))
    var finish: [Int: Duration] = [:]
    for row in order {
        let worker = free.indices.min { free[$0] < free[$1] } ?? 0
        let done = free[worker] + latency.latency(of: row)
        guard done <= script.frame * (lastShown[row] ?? 0) else { continue }
        free[worker] = done
        finish[row] = done
    }

    var score = FrameScore()
    for (index, top) in script.tops.enumerated() {
        score.frame(top..<min(script.rows, top + script.viewport), at: script.frame * index) { row in
            finish[row].map { $0 <= script.frame * index } ?? false
        }
    }
    var result = score.result(.clairvoyant, frames: script.tops.count)
    result.worksStarted = finish.count
    return result
}
