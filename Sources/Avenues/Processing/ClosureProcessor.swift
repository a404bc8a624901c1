/// A ``Processor`` made from a closure, for work that needs no type of its own:
/// `ClosureProcessor { path in try await summarize(path) }`.
public struct ClosureProcessor<Key: Sendable, Value: Sendable>: Processor {
    private let body: @Sendable (Key) async throws -> Value

    /// Creates a processor that runs `body` for each key.
    public init(_ body: @escaping @Sendable (Key) async throws -> Value) {
        self.body = body
    }

    /// Runs the closure for `key`.
    public func process(_ key: Key) async throws -> Value {
        try await body(key)
    }
}
