/// A ``Processor`` that queues and limits its own work: ``AutoProcessor``, ``AsyncMedia``,
/// ``MultiplexerMap``, and the transforms of these (`mapKeys`, `mapValues`, `asyncMapValues`,
/// `cached(in:)`).
///
/// An ``Avenue`` over one does not put a second queue in front of it: it keeps its own claims per
/// row (coalescing, reference-counted cancellation) with no limit of its own, and asks each row's
/// key through ``process(_:priority:)`` with the row's ``RunPriority``. So there is one concurrency
/// limit — the one configured on that processor — a prefetch waits there as a prefetch, a row
/// scrolled into view moves its work forward there, and a row scrolled away releases its claim
/// there. An ``AutoProcessor`` made over one does the same. A user's own plain `Processor` is
/// wrapped in an ``AutoProcessor`` with its default settings.
///
/// Work a transform adds around the scheduler (an `asyncMapValues` step, a `cached(in:)` read) runs
/// in the outer run, outside the inner limit.
public protocol SchedulingProcessor<Key, Value>: Processor {
    /// The value for `key`, for a run at `priority`: queue it at `priority.value` and follow the
    /// run's changes (``RunPriority/observe(_:)``) until the value is made. ``Processor/process(_:)``
    /// is the same at `.visible`.
    func process(_ key: Key, priority: RunPriority) async throws -> Value
}

extension KeyMappedProcessor: SchedulingProcessor where Base: SchedulingProcessor {
    /// Asks `base` for the mapped key, at `priority`.
    public func process(_ key: Key, priority: RunPriority) async throws -> Base.Value {
        try await base.process(baseKey(for: key), priority: priority)
    }
}

extension ValueMappedProcessor: SchedulingProcessor where Base: SchedulingProcessor {
    /// Asks `base` at `priority`, then transforms its value.
    public func process(_ key: Base.Key, priority: RunPriority) async throws -> Value {
        try await transformed(base.process(key, priority: priority))
    }
}

extension CachedProcessor: SchedulingProcessor where Base: SchedulingProcessor {
    /// The cached value for `key`, or `base`'s value at `priority`, which is then cached.
    public func process(_ key: Base.Key, priority: RunPriority) async throws -> Base.Value {
        try await process(key) { try await base.process($0, priority: priority) }
    }
}
