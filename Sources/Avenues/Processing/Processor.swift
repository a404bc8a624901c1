/// Something that makes a value for a key: a download, a database read, a computed asset.
///
/// This is what a user writes. Implementations should honour task cancellation where they can
/// (check `Task.isCancelled`, call `try Task.checkCancellation()`, or use APIs that do), because
/// ``AutoProcessor`` cancels the task running `process(_:)` when nobody wants the value any more.
///
/// `process(_:)` runs on Swift's shared pool (or the executor given to ``AutoProcessor``), which
/// has a thread per core. Long work that never awaits holds its thread: with as many such runs as
/// cores, nothing else in the process runs — a screen stops drawing and taking keys. Await
/// `Task.yield()` every millisecond or so of such work (the examples' checksum does, after each MiB
/// read), or run blocking calls on a thread of their own.
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

    /// Whether `key` can be made without the network — a processor with a cache of its own (a
    /// download kept on disk) says so for the keys it holds. While an ``Avenue`` holds loads back
    /// because the network is down (its offline wait, see ``RetryPolicy``), it still loads these:
    /// the rows a user saw in an earlier session show offline. Asked only then, so it may read a
    /// disk, but it should be quick and must not wait for the network. `false` by default.
    func isAvailableOffline(_ key: Key) -> Bool
}

extension Processor {
    /// `false`: a processor with no cache of its own needs the network for every key.
    public func isAvailableOffline(_ key: Key) -> Bool { false }
}
