/// A processor whose values are transformed; see ``Processor/mapValues(_:)`` and
/// ``Processor/asyncMapValues(_:)``.
public struct ValueMappedProcessor<Base: Processor, Value: Sendable>: Processor {
    /// The processor doing the work.
    public let base: Base
    private let transform: @Sendable (Base.Value) async throws -> Value

    /// Creates a processor that transforms each of `base`'s values with `transform`.
    public init(_ base: Base, transform: @escaping @Sendable (Base.Value) async throws -> Value) {
        self.base = base
        self.transform = transform
    }

    /// Asks `base`, then transforms its value.
    public func process(_ key: Base.Key) async throws -> Value {
        try await transform(base.process(key))
    }

    /// `value`, transformed.
    func transformed(_ value: Base.Value) async throws -> Value {
        try await transform(value)
    }

    /// Whether `base` makes `key` without the network (the transform is local).
    public func isAvailableOffline(_ key: Base.Key) -> Bool {
        base.isAvailableOffline(key)
    }
}

extension Processor {
    /// This processor with each value transformed by `transform`, which may throw (the request then
    /// fails with that error). Values only flow out of a processor, so one direction is enough.
    ///
    /// ```swift
    /// let lineCount = readFile.mapValues { data in data.split(separator: 10).count }
    /// ```
    public func mapValues<NewValue: Sendable>(
        _ transform: @escaping @Sendable (Value) throws -> NewValue
    ) -> ValueMappedProcessor<Self, NewValue> {
        ValueMappedProcessor(self) { try transform($0) }
    }

    /// This processor with each value transformed by an asynchronous `transform` (decoding, resizing).
    /// Under an ``AutoProcessor`` the transform is part of the run, so it is coalesced and cancelled
    /// with it.
    public func asyncMapValues<NewValue: Sendable>(
        _ transform: @escaping @Sendable (Value) async throws -> NewValue
    ) -> ValueMappedProcessor<Self, NewValue> {
        ValueMappedProcessor(self, transform: transform)
    }
}
