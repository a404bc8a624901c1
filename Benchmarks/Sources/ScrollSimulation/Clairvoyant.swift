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

    var result = SimulationResult(
        strategy: .clairvoyant, frames: script.tops.count, placeholderRowFrames: 0, worksStarted: finish.count,
        worksCancelled: 0, worksUnshown: 0, appearances: 0, appearancesLeftUnloaded: 0, totalTimeToVisible: .zero
    )
    var visible = 0..<0
    var waitingSince: [Int: Duration] = [:]
    var waits = Waits()
    for (index, top) in script.tops.enumerated() {
        let now = script.frame * index
        let rows = top..<min(script.rows, top + script.viewport)
        for row in rows {
            let loaded = finish[row].map { $0 <= now } ?? false
            if !loaded { result.placeholderRowFrames += 1 }
            if !visible.contains(row) {
                result.appearances += 1
                if !loaded { waitingSince[row] = now } else { waits.add(.zero) }
            } else if loaded, let since = waitingSince.removeValue(forKey: row) {
                result.totalTimeToVisible += now - since
                waits.add(now - since)
            }
        }
        for row in waitingSince.keys where !rows.contains(row) {
            result.appearancesLeftUnloaded += 1
            waitingSince[row] = nil
        }
        visible = rows
    }
    result.p95TimeToVisible = waits.p95
    return result
}
