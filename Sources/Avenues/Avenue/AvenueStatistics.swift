/// Counters of what an ``Avenue`` has done since it was created.
public struct AvenueStatistics: Sendable, Hashable {
    /// Rows prepared whose value was already stored.
    public var cacheHits = 0
    /// Loads started (one per key, however many rows wait for it).
    public var loadsStarted = 0
    /// Loads that produced a value.
    public var loadsCompleted = 0
    /// Loads that failed.
    public var loadsFailed = 0
    /// Loads dropped before they finished, because their rows were released or the key cancelled.
    public var loadsCancelled = 0

    /// Loads started and not yet finished, failed or cancelled.
    public var loadsInFlight: Int { loadsStarted - loadsCompleted - loadsFailed - loadsCancelled }

    /// Counters at zero, as a new avenue's are.
    public init() {}
}
