/// A storage that keeps nothing: every read is a miss and every write is dropped.
///
/// It is the identity of ``Storage/layered(over:)``: `EmptyStorage().layered(over: s)` and
/// `s.layered(over: EmptyStorage())` behave exactly like `s`. Use it for an avenue that should
/// never remember results, or as the starting point of a fold over a list of storages.
public struct EmptyStorage<Key: Sendable, Value: Sendable>: Storage {
    /// Creates the empty storage.
    public init() {}

    /// Always `nil`.
    public func value(for key: Key) -> Value? { nil }
    /// Does nothing.
    public func set(_ value: Value, for key: Key) {}
    /// Does nothing.
    public func removeValue(for key: Key) {}
    /// Does nothing.
    public func removeAll() {}
}
