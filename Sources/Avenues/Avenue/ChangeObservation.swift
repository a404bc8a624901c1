/// An observer added with ``Avenue/observe(_:)`` or ``PagedRows/observe(_:)``: it is told every
/// change until ``cancel()``, or until what it observes is gone. Dropping this object does not stop
/// it (an observer set up once for a list's life needs nothing kept).
public final class ChangeObservation: Sendable {
    private let stop: RunOnce

    init(stop: @escaping @Sendable () -> Void) {
        self.stop = RunOnce(stop)
    }

    /// Stops telling the observer: no call to it begins after this returns, except one that another
    /// thread had already decided to make (the same rule as ``Avenue/cancel(at:)``). Safe to call
    /// more than once, and from inside the observer.
    public func cancel() {
        stop.run()
    }
}
