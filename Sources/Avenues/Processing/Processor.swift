/// Something that makes a value for a key: a download, a database read, a computed asset.
///
/// This is what a user writes. Implementations should honour task cancellation where they can
/// (check `Task.isCancelled`, call `try Task.checkCancellation()`, or use APIs that do), because
/// ``AutoProcessor`` cancels the task running `process(_:)` when nobody wants the value any more.
///
/// ```swift
/// struct Checksum: Processor {
///     func process(_ path: String) async throws -> UInt64 { ... }
/// }
/// ```
public protocol Processor<Key, Value>: Sendable {
    /// What the processor is asked for.
    associatedtype Key: Sendable
    /// What it makes.
    associatedtype Value: Sendable

    /// Makes the value for `key`, or throws. Called concurrently for different keys.
    func process(_ key: Key) async throws -> Value
}
