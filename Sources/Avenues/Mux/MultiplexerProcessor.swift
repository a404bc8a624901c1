/// Lets single ``Multiplexer``s serve an ``Avenue``: each row's key is a multiplexer (a dashboard
/// row per endpoint, say), and loading the row is `request()` — cached, coalesced and offline-safe.
///
/// ```swift
/// let avenue = Avenue<Int, Multiplexer<Status>, Status>(storage: MemoryStorage(), processor: MultiplexerProcessor())
/// avenue.prepareItem(for: serviceStatus[row], at: row)
/// ```
public struct MultiplexerProcessor<T: Codable & Sendable>: Processor {
    /// Creates the adapter.
    public init() {}

    /// The multiplexer's value: `try await multiplexer.request()`.
    public func process(_ multiplexer: Multiplexer<T>) async throws -> T {
        try await multiplexer.request()
    }
}
