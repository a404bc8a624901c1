/// The clairvoyant bound: a scheduler that knows the whole script and every work's latency in
/// advance. With the same `maxConcurrent` workers it starts exactly the rows that will be shown with
/// their value, in the order they are first needed, each on the first worker free (from time zero:
/// nothing is ever too early), skipping rows it could not load before they leave the screen for the
/// last time, and never wastes a run. Not a proven optimum — reordering by deadline and latency
/// could sometimes do better — but the practical bound a prefetcher aims at.
///
/// It is computed, not simulated: finish times follow from the schedule, and the frames are then
/// scored exactly as ``simulate(_:script:maxConcurrent:reservedForVisible:latency:)`` scores them.
///
/// With `foresight`, the scheduler knows the future only from that frame on: before it, it may
/// start only rows shown by then and a block of rows past either edge of the screen (``Foresight``):
/// what a policy that cannot see the future, and started no more than that many rows ahead before
/// that frame, could have ready.
public func clairvoyant(_ script: UserScript, latency: WorkLatency, maxConcurrent: Int, foresight: Foresight? = nil) -> SimulationResult {
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
        let earliest = foresight.map { $0.earliestStart(of: row, firstNeeded: firstNeeded[row] ?? 0, in: script) } ?? .zero
        let done = max(free[worker], earliest) + latency.latency(of: row)
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

/// Where the clairvoyant scheduler's knowledge of the future begins; see
/// ``clairvoyant(_:latency:maxConcurrent:foresight:)``.
public struct Foresight: Sendable {
    /// The frame from which the scheduler knows the rest of the script (the first where two
    /// scripts differ).
    public var frame: Int
    /// How many rows past each edge of the screen before that frame it may start earlier.
    public var rows: Int
    /// How many rows past each edge those rows begin: 0 for the nearest.
    public var skipping: Int

    /// A foresight from `frame`, with `rows` rows allowed early past each edge of the screen before
    /// it, beginning `skipping` rows past the edge.
    public init(frame: Int, rows: Int, skipping: Int = 0) {
        self.frame = frame
        self.rows = rows
        self.skipping = skipping
    }

    /// The earliest a run for `row` may start: any time for rows shown before `frame` or among the
    /// rows allowed early, else `frame`'s time.
    func earliestStart(of row: Int, firstNeeded: Int, in script: UserScript) -> Duration {
        guard firstNeeded >= frame, frame > 0, frame <= script.tops.count else { return .zero }
        let top = script.tops[frame - 1]
        let bottom = top + script.viewport
        if (top - skipping - rows ..< top - skipping).contains(row) || (bottom + skipping ..< bottom + skipping + rows).contains(row) { return .zero }
        return script.frame * frame
    }
}
