/// What a simulated user does, frame by frame: the top row of the viewport at each frame.
public struct UserScript: Sendable {
    /// One part of the script.
    public enum Step: Sendable {
        /// Stay still.
        case pause(seconds: Double)
        /// Move at a steady speed (negative: up).
        case scroll(rowsPerSecond: Double, seconds: Double)
        /// A flick: start fast and slow down by `decay` every frame until nearly stopped.
        case fling(rowsPerSecond: Double, decay: Double)
        /// Go straight to a row (Home, End).
        case jump(toRow: Int)
        /// Press a key that moves `rows` at once (PgDn: a screen), `times` times, one press every
        /// `every` seconds.
        case press(rows: Int, times: Int, every: Double)
        /// The app hints the screens starting at these rows (``Avenues/RowPrefetcher/hint(_:)``),
        /// from the next frame on; takes no time.
        case hint([Int])
    }

    /// Rows in the list.
    public let rows: Int
    /// Rows on screen.
    public let viewport: Int
    /// How long a frame lasts.
    public let frame: Duration
    /// The viewport's top row at each frame.
    public let tops: [Int]
    /// The hints the app gives, by the frame they are given at (before that frame's rows are shown).
    public let hints: [Int: [Int]]

    /// A script from its frames.
    public init(rows: Int, viewport: Int, frame: Duration = .milliseconds(16), tops: [Int], hints: [Int: [Int]] = [:]) {
        self.rows = rows
        self.viewport = viewport
        self.frame = frame
        self.tops = tops
        self.hints = hints
    }

    /// The script from frame `frame` on (a cold start there), with its hints.
    public func dropFirst(_ frame: Int) -> UserScript {
        let start = min(max(0, frame), tops.count)
        let later = hints.filter { $0.key >= start }.map { ($0.key - start, $0.value) }
        return UserScript(rows: rows, viewport: viewport, frame: self.frame, tops: Array(tops[start...]), hints: Dictionary(uniqueKeysWithValues: later))
    }

    /// Plays `steps` into frames.
    public init(rows: Int, viewport: Int, frame: Duration = .milliseconds(16), steps: [Step]) {
        self.rows = rows
        self.viewport = viewport
        self.frame = frame
        let frameSeconds = Double(frame.components.attoseconds) / 1e18 + Double(frame.components.seconds)
        let last = max(0, rows - viewport)
        var position = 0.0
        var tops: [Int] = []
        var hints: [Int: [Int]] = [:]
        func emit() {
            position = min(Double(last), max(0, position))
            tops.append(Int(position))
        }
        for step in steps {
            switch step {
            case .pause(let seconds):
                for _ in 0..<Int(seconds / frameSeconds) { emit() }
            case .scroll(let speed, let seconds):
                for _ in 0..<Int(seconds / frameSeconds) {
                    position += speed * frameSeconds
                    emit()
                }
            case .fling(var speed, let decay):
                while abs(speed) > 5 {
                    position += speed * frameSeconds
                    speed *= decay
                    emit()
                }
            case .jump(let row):
                position = Double(row)
                emit()
            case .press(let rows, let times, let every):
                for _ in 0..<times {
                    position += Double(rows)
                    emit()
                    for _ in 1..<max(1, Int(every / frameSeconds)) { emit() }
                }
            case .hint(let rows):
                hints[tops.count] = rows
            }
        }
        self.tops = tops
        self.hints = hints
    }

    /// The standard script of the benchmark: 100,000 rows, a 40-row screen, about 70 seconds of
    /// steady scrolling, fast flings both ways, pauses, and a jump to the end and back.
    public static let standard = UserScript(rows: 100_000, viewport: 40, steps: [
        .pause(seconds: 1),
        .scroll(rowsPerSecond: 30, seconds: 8),
        .pause(seconds: 1.5),
        .fling(rowsPerSecond: 2_000, decay: 0.96),
        .pause(seconds: 1),
        .scroll(rowsPerSecond: 20, seconds: 4),
        .fling(rowsPerSecond: 3_000, decay: 0.97),
        .pause(seconds: 2),
        .scroll(rowsPerSecond: -25, seconds: 4),
        .fling(rowsPerSecond: -1_500, decay: 0.96),
        .pause(seconds: 1),
        .scroll(rowsPerSecond: 40, seconds: 5),
        .fling(rowsPerSecond: 2_500, decay: 0.95),
        .pause(seconds: 0.5),
        .fling(rowsPerSecond: 2_500, decay: 0.95),
        .pause(seconds: 1),
        .jump(toRow: 99_960),
        .pause(seconds: 2),
        .scroll(rowsPerSecond: -30, seconds: 3),
        .jump(toRow: 0),
        .pause(seconds: 2),
        .scroll(rowsPerSecond: 35, seconds: 6),
        .pause(seconds: 1),
    ])
}
