/// When a screen follows git's progress through a log: when the count of commits read moves, and
/// once more when git finishes — the count need not move then (a log limited to a path walks the
/// rest of the history after its last match, and may finish in a later look than its last commit).
public struct LogProgressWatch: Sendable {
    private var last: (read: Int, finished: Bool)?

    /// A watch that has seen nothing yet.
    public init() {}

    /// Whether `progress` (``GitLog/progress``) changes what the screen shows since the last look.
    public mutating func changes(_ progress: (read: Int, finished: Bool)) -> Bool {
        defer { last = progress }
        guard let last else { return true }
        return last.read != progress.read || last.finished != progress.finished
    }
}
