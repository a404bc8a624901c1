/// Lets single ``Multiplexer``s serve an ``Avenue``: each row's key is a multiplexer (a dashboard
/// row per endpoint, say), and loading the row is `value()` — cached, coalesced and offline-safe.
///
/// ```swift
/// let avenue = Avenue<Int, Multiplexer<Status>, Status>(storage: MemoryStorage(), processor: MultiplexerProcessor())
/// avenue.prepareItem(for: serviceStatus[row], at: row)
/// ```
public struct MultiplexerProcessor<Value: Codable & Sendable>: Processor {
    /// Creates the adapter. It holds nothing: the multiplexers are the keys, so one adapter serves
    /// every multiplexer of value type `Value`, and each keeps its own cache and fetch.
    public init() {}

    /// The multiplexer's value: `try await multiplexer.value()`.
    public func process(_ multiplexer: Multiplexer<Value>) async throws -> Value {
        try await multiplexer.value()
    }

    /// Whether the multiplexer has a cached value: offline, `value()` answers with it.
    public func isAvailableOffline(_ multiplexer: Multiplexer<Value>) -> Bool {
        multiplexer.cachedValue != nil
    }
}
