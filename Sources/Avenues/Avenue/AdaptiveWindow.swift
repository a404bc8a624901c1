import Foundation

/// The adaptive policy of ``RowPrefetcher``: the window follows how the list moves — a held key,
/// bursts of PgDn, reading, jumps, flings — and how long loads take, instead of a fixed number of rows.
///
/// - **Rate**: rows per second from the times and positions of `show` calls, smoothed over about a
///   tenth of a second; no movement for 0.2 s is rest.
/// - **Steps**: a move of more than a quarter screen from rest (PgDn, a jump) is a step, not speed.
///   Steps the same way within 0.6 s of each other are a burst, whose speed is a step per gap. A step
///   of more than two screens is a jump; a scroll that starts from rest, or a shorter step, is not.
/// - **Latency**: the 25th percentile of the last 32 visible loads, from the `show` that asked for a
///   row to the first `show` that found it loaded (100 ms until one is measured): a screen's rows
///   wait for workers, and the fastest quarter is close to the work itself. And the slow end: the
///   98th percentile of the last 64 loads of any row of the window.
/// - **Window**, in the direction of travel (a quarter screen behind):
///   - moving: a screen, or twice the rows that pass during one load if faster than a screen a
///     second, or the rows that pass while the slow end of the loads runs (at most 2.5 screens),
///     whichever is most, at most four screens;
///   - at rest: as many screens as a burst usually crosses (an average of burst lengths, each
///     scroll counting as one, from 2 before anything is known; at most 3); a quarter screen (a
///     sixteenth behind) once most recent steps were jumps.
///   Loads already asked for rows ahead stay wanted up to four screens out, so a window that shrinks
///   as the list slows does not cancel work the list is heading for.
/// - **Seek**: while a screen or more passes during one load of a scroll or fling (not a burst of
///   steps, whose every screen is shown), nothing new is loaded: every row asked for would have left
///   the screen before its load landed. The next `show` at rest (a front end shows its rows on every
///   frame, or at least once after the user stops) loads the screen where the list stopped.
///
/// ``RowPrefetcher/hint(_:)``'s screens go after the window; at rest, after a quarter screen ahead, or
/// right after the visible rows while the list moves by jumps. The scroll simulation
/// (`Benchmarks/README.md`) gives every workload and recorded session, including where this does worse
/// than a fixed window.
public struct AdaptiveWindow: Sendable {
    /// What the policy estimates and chose at the last `show`.
    public struct Estimates: Sendable, Hashable, CustomStringConvertible {
        /// Rows per second in the direction of travel (0 at rest).
        public var rowsPerSecond: Double
        /// The load latency planned with.
        public var latency: Duration
        /// Rows prefetched ahead.
        public var ahead: Int
        /// Rows prefetched behind.
        public var behind: Int
        /// Whether rows that would leave the screen before loading are skipped.
        public var seeking: Bool
        /// Whether the list moves by jumps (most recent steps landed beyond the window): at rest the
        /// window is small, and hinted screens (``RowPrefetcher/hint(_:)``) come before it.
        public var jumping = false

        /// `12 rows/s, latency 85 ms, ahead 50, behind 10` (and `seeking`).
        public var description: String {
            let milliseconds = Int((latency / .milliseconds(1)).rounded())
            return "\(Int(rowsPerSecond.rounded())) rows/s, latency \(milliseconds) ms, ahead \(ahead), behind \(behind)"
                + (seeking ? ", seeking" : "") + (jumping ? ", jumping" : "")
        }
    }

    static let timeConstant = 0.1
    static let restAfter = 0.2
    static let samplesKept = 32
    /// More window samples: the slow end is rare (a 2 s load in 20), and a short history forgets it.
    static let windowSamplesKept = 64
    static let percentile = 25
    /// The slow end of the latencies, for how far ahead a moving list must ask.
    static let tailPercentile = 98
    /// Steps this close together, the same way, are one burst (PgDn held or tapped fast).
    static let burstGap = 0.6

    static let defaultLatency = 0.1

    var estimates = Estimates(rowsPerSecond: 0, latency: .milliseconds(100), ahead: 0, behind: 0, seeking: false)
    /// Signed rows per second (positive: down), smoothed.
    var velocity = 0.0
    var lastShow: ContinuousClock.Instant?
    var lastMove: ContinuousClock.Instant?
    /// Whether the previous `show` moved the list.
    var previousMoved = false
    /// The last step from rest (PgDn, a jump): when, and rows (signed).
    var lastStep: (time: ContinuousClock.Instant, rows: Int)?
    /// Rows per second (signed) of the burst of steps under way, if any.
    var burstVelocity = 0.0
    /// Steps in the current (or last) run of steps the same way in quick succession; 1 for a lone
    /// PgDn.
    var burstSteps = 0
    /// The steps a burst usually has (an average, the latest weighing half): how many screens a list
    /// at rest can expect the next burst to cross.
    var typicalBurst = 2.0
    /// How often recent steps landed beyond the window (jumps, not paging): 0 (never) to 1 (always),
    /// halved towards the latest at each step.
    var jumpiness = 0.0
    /// Visible rows asked for and not seen loaded yet, with when they were asked.
    var waiting: [Int: ContinuousClock.Instant] = [:]
    /// Latencies of visible rows measured, in seconds, oldest first.
    var samples: [Double] = []
    /// Rows of the window (visible or prefetched) asked for and not seen loaded yet, with when
    /// they were first asked.
    var waitingInWindow: [Int: ContinuousClock.Instant] = [:]
    /// Latencies of every row of the window, in seconds, oldest first: their slow end (a prefetch
    /// that took seconds) says how far ahead a moving list must ask.
    var windowSamples: [Double] = []

    init() {}

    /// A `show` of `screen` rows from `top` at `time`.
    mutating func shown(top: Int, previousTop: Int?, screen: Int, at time: ContinuousClock.Instant) {
        defer { lastShow = time }
        guard let previousTop, let lastShow else { return }
        let seconds = max(0.001, Self.seconds(time - lastShow))
        let (moved, overflow) = top.subtractingReportingOverflow(previousTop)
        let stepped = moved.magnitude > UInt(max(1, screen / 4)) && previousMoved == false
        defer { previousMoved = moved != 0 }
        if overflow || moved.magnitude > UInt(max(1, screen)) * 10 || stepped {
            // A jump, or a step from rest (PgDn, a search hit): the list is somewhere else, not
            // moving fast; the window around the new place is what is needed. Unless steps come
            // in a burst the same way (PgDn pressed again and again): that is speed, a step at a
            // time.
            velocity = 0
            lastMove = nil
            let far = overflow || moved.magnitude > UInt(max(1, screen)) * 2
            jumpiness = jumpiness / 2 + (far ? 0.5 : 0)
            burstVelocity = 0
            if !far, let lastStep, (lastStep.rows > 0) == (moved > 0) {
                let gap = Self.seconds(time - lastStep.time)
                if gap <= Self.burstGap { burstVelocity = Double(moved) / max(gap, 0.001) }
            }
            if burstVelocity != 0 {
                burstSteps += 1
            } else {
                endBurst()
                burstSteps = far ? 0 : 1
            }
            lastStep = far ? nil : (time, moved)
            return
        }
        let instant = Double(moved) / seconds
        // A scroll that starts from rest is a move that was neither a jump nor a burst of steps.
        if moved != 0, lastMove.map({ Self.seconds(time - $0) > Self.restAfter }) ?? true {
            jumpiness /= 2
            endBurst()
            typicalBurst = (typicalBurst + 1) / 2
        }
        let weight = 1 - exp(-seconds / Self.timeConstant)
        if moved != 0, (instant > 0) != (velocity > 0) {
            velocity = instant * weight  // reversed: the old speed says nothing
        } else {
            velocity += weight * (instant - velocity)
        }
        if moved != 0 { lastMove = time }
    }

    /// Folds the burst that ended into the typical burst.
    mutating func endBurst() {
        guard burstSteps > 0 else { return }
        typicalBurst = (typicalBurst + Double(burstSteps)) / 2
        burstSteps = 0
    }

    /// Visible rows asked for at `time` and not loaded then; rows that left `window` are no longer
    /// timed (their loads were cancelled and never arrive).
    mutating func asked(_ rows: [(row: Int, visible: Bool)], at time: ContinuousClock.Instant, window: [Int: LoadPriority]) {
        waiting = waiting.filter { window[$0.key] != nil }
        waitingInWindow = waitingInWindow.filter { window[$0.key] != nil }
        for (row, visible) in rows {
            if visible, waiting[row] == nil { waiting[row] = time }
            if waitingInWindow[row] == nil { waitingInWindow[row] = time }
        }
    }

    /// The rows whose loads are being timed.
    var waitingRows: [Int] {
        // Every visible row waiting is a window row waiting too (both are asked, filtered and
        // arrive together). Sorted: the samples kept must not depend on hashing.
        waitingInWindow.keys.sorted()
    }

    /// Rows seen loaded (or failed) at `time`.
    mutating func arrived(_ rows: [Int], at time: ContinuousClock.Instant) {
        for row in rows {
            // At least 0: a clock of the caller's (`now:`) may go back.
            if let asked = waiting.removeValue(forKey: row) { Self.append(max(0, Self.seconds(time - asked)), to: &samples, keeping: Self.samplesKept) }
            if let asked = waitingInWindow.removeValue(forKey: row) {
                Self.append(max(0, Self.seconds(time - asked)), to: &windowSamples, keeping: Self.windowSamplesKept)
            }
        }
    }

    static func append(_ sample: Double, to samples: inout [Double], keeping kept: Int) {
        samples.append(sample)
        if samples.count > kept { samples.removeFirst(samples.count - kept) }
    }

    /// The 25th percentile of the latencies measured, in seconds.
    var latency: Double { Self.latency(percentile: Self.percentile, of: samples) }

    /// The `percentile`th percentile of `samples`, in seconds.
    static func latency(percentile: Int, of samples: [Double]) -> Double {
        guard !samples.isEmpty else { return Self.defaultLatency }
        let sorted = samples.sorted()
        return sorted[min(sorted.count - 1, sorted.count * percentile / 100)]
    }

    /// The rows to prepare for `visible`, in order, with their priorities.
    mutating func plan(visible: Range<Int>, down: Bool, maxRows: Int, moved: Bool, applied: [Int: LoadPriority]) -> [(row: Int, priority: LoadPriority)] {
        let screen = max(1, visible.count)
        var resting = true
        if let lastMove, let lastShow { resting = Self.seconds(lastShow - lastMove) > Self.restAfter }
        var bursting = false
        if let lastStep, let lastShow {
            let sinceStep = Self.seconds(lastShow - lastStep.time)
            bursting = burstVelocity != 0 && sinceStep <= Self.burstGap
            if sinceStep > Self.burstGap { endBurst() }
        }
        let gliding = resting ? 0 : abs(velocity)
        let speed = max(gliding, bursting ? abs(burstVelocity) : 0)
        let latency = self.latency
        let tail = Self.latency(percentile: Self.tailPercentile, of: windowSamples)
        let lead = speed * latency  // rows that pass during one load
        // A burst of steps shows every screen it lands on, however fast: only a glide seeks.
        let seeking = gliding * latency >= Double(screen)
        var wanted: [(row: Int, priority: LoadPriority)] = []
        let room = max(0, maxRows - screen)

        if seeking {
            // Nothing new: every row asked now would have left the screen when its load landed,
            // and where the list will stop cannot be told yet (loading a guessed landing screen did
            // worse in the simulation: 22,574 placeholder row-frames against 20,867). Loads asked
            // earlier for rows still ahead go on; the list passes them later.
            // Saturating: a list seeking near either end of the integers is cut there.
            let reach = Saturating.add(Int(max(0, min(lead, Double(Saturating.multiply(4, screen))))), screen)
            let path = down ? visible.lowerBound ..< Saturating.add(visible.lowerBound, reach)
                : Saturating.subtract(visible.upperBound, reach) ..< visible.upperBound
            wanted = applied.filter { path.contains($0.key) && $0.value != .background }.keys.sorted().map { ($0, .prefetch) }
            estimates = Estimates(rowsPerSecond: speed, latency: Saturating.duration(seconds: latency), ahead: 0, behind: 0, seeking: true)
        } else {
            // Slower than a screen a second, a screen ahead keeps up, unless slow loads (the tail)
            // take longer than a screen takes to pass; faster, twice the rows that pass during a
            // load. At rest after jumps (steps beyond the window), a quarter of a screen: the next
            // move is likely another jump, and the hints' screens get the workers.
            let moving = Int(min(2.5 * Double(screen), speed * tail))
            let jumping = speed == 0 && jumpiness > 0.5
            // At rest after bursts of PgDn, the screens the next burst usually crosses (at most
            // three); after lone steps or scrolling, one.
            let screensAhead = max(1, Int(min(3, typicalBurst) + 0.25))
            let standing = jumping ? max(1, screen / 4) : screensAhead * screen
            let ahead = min(room, min(4 * screen, max(speed > Double(screen) ? max(screen, Int(2 * lead)) : standing, moving)))
            let behind = min(room - ahead, jumping ? screen / 16 : screen / 4)
            let leadingFirst = moved && down
            wanted = (leadingFirst ? Array(visible.reversed()) : Array(visible)).map { ($0, .visible) }
            wanted += Self.beyond(visible, count: ahead, down: down).map { ($0, .prefetch) }
            wanted += Self.beyond(visible, count: behind, down: !down).map { ($0, .prefetch) }
            // The window shrinks as the list slows down; loads already asked ahead of it go on (the
            // list is heading their way), up to the largest window that leaves room for the rows
            // behind (`ahead + behind <= room`, so this is never fewer than `ahead`).
            let kept = Self.beyond(visible, count: min(room - behind, 4 * screen), down: down).dropFirst(ahead)
            let keep = Set(kept)
            wanted += applied.filter { keep.contains($0.key) && $0.value != .background }.keys.sorted().map { ($0, .prefetch) }
            estimates = Estimates(rowsPerSecond: speed, latency: Saturating.duration(seconds: latency), ahead: ahead, behind: behind, seeking: false, jumping: jumping)
        }
        return wanted
    }


    /// `count` rows past `rows` going down (or up), nearest first, cut at the ends of the integers.
    static func beyond(_ rows: Range<Int>, count: Int, down: Bool) -> [Int] {
        guard count > 0 else { return [] }
        if down {
            let (end, overflow) = rows.upperBound.addingReportingOverflow(count)
            return Array(rows.upperBound ..< (overflow ? Int.max : end))
        }
        let (start, overflow) = rows.lowerBound.subtractingReportingOverflow(count)
        return Array(((overflow ? Int.min : start) ..< rows.lowerBound).reversed())
    }

    static func seconds(_ duration: Duration) -> Double {
        duration / .seconds(1)
    }
}
