/// Where a key stands in an ``AutoProcessor``.
public enum ProcessingState: Sendable, Hashable, CustomStringConvertible {
    /// Nothing is queued, running or being delivered for the key. A finished key reads `.idle` once
    /// its result has been handed out, because finished runs leave the processor's tables.
    case idle
    /// Waiting for a free worker.
    case queued
    /// The work is running.
    case running
    /// The work returned a value, which is being handed to everyone who was waiting. A request made
    /// now starts a new run: it asks after the work returned, so that value may be outdated for it.
    case completed
    /// The work failed and the error is being handed to everyone who was waiting. A request made now
    /// starts a new run (failures are never cached).
    case failed

    /// The case's name, for logs: `idle`, `queued`, `running`, `completed` or `failed`.
    public var description: String {
        switch self {
        case .idle: "idle"
        case .queued: "queued"
        case .running: "running"
        case .completed: "completed"
        case .failed: "failed"
        }
    }
}
