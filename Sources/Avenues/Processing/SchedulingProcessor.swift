/// A ``Processor`` that queues and limits its own work: ``AutoProcessor``, ``AsyncMedia``,
/// ``MultiplexerMap``, and the transforms of these (`mapKeys`, `mapValues`, `asyncMapValues`,
/// `cached(in:)`).
///
/// An ``Avenue`` over one does not put a second queue in front of it: it keeps its own claims per
/// row (coalescing, reference-counted cancellation) with no limit of its own, and tells the
/// processor inside each row's priority. So there is one concurrency limit — the one configured on
/// that processor — a prefetch waits there as a prefetch, a row scrolled into view moves its work
/// forward there, and a row scrolled away releases its claim there. A user's own plain `Processor`
/// is wrapped in an ``AutoProcessor`` with its default settings, as before.
///
/// Work a transform adds around the scheduler (an `asyncMapValues` step, a `cached(in:)` read) runs
/// in the avenue's task for the row's key, outside that limit.
public protocol SchedulingProcessor<Key, Value>: Processor {}

extension AutoProcessor: SchedulingProcessor {}
extension KeyMappedProcessor: SchedulingProcessor where Base: SchedulingProcessor {}
extension ValueMappedProcessor: SchedulingProcessor where Base: SchedulingProcessor {}
extension CachedProcessor: SchedulingProcessor where Base: SchedulingProcessor {}
