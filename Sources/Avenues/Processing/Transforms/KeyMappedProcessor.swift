/// A processor asked with another key type; see ``Processor/mapKeys(_:)``.
public struct KeyMappedProcessor<Base: Processor, Key: Sendable>: Processor {
    /// The processor doing the work.
    public let base: Base
    private let transform: @Sendable (Key) -> Base.Key

    /// Creates a processor that turns each key into `base`'s key with `transform`.
    public init(_ base: Base, transform: @escaping @Sendable (Key) -> Base.Key) {
        self.base = base
        self.transform = transform
    }

    /// Asks `base` for `transform(key)`.
    public func process(_ key: Key) async throws -> Base.Value {
        try await base.process(transform(key))
    }

    /// `base`'s key for `key`.
    func baseKey(for key: Key) -> Base.Key {
        transform(key)
    }

    /// Whether `base` makes `transform(key)` without the network.
    public func isAvailableOffline(_ key: Key) -> Bool {
        base.isAvailableOffline(transform(key))
    }
}

extension Processor {
    /// This processor asked with `NewKey`, each turned into this processor's key by `transform`.
    ///
    /// ```swift
    /// let byURL = download.mapKeys { (row: Row) in row.url }
    /// ```
    public func mapKeys<NewKey: Sendable>(
        _ transform: @escaping @Sendable (NewKey) -> Key
    ) -> KeyMappedProcessor<Self, NewKey> {
        KeyMappedProcessor(self, transform: transform)
    }
}
