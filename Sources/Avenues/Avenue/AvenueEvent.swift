/// A change of one row of an ``Avenue``, as delivered by ``Avenue/subscribe()``.
public struct AvenueEvent<Index: Sendable>: Sendable {
    /// What happened to the row.
    public enum Change: Sendable {
        /// The value is now readable with ``Avenue/item(at:)``.
        case loaded
        /// Making the value failed.
        case failed(any Error)
        /// The load was cancelled for everyone by a shared processor's `cancel(_:)`; the row is
        /// `.empty` and may be prepared again.
        case cancelled
    }

    /// The row that changed.
    public let index: Index
    /// What happened.
    public let change: Change

    @usableFromInline
    init(index: Index, change: Change) { (self.index, self.change) = (index, change) }
}
