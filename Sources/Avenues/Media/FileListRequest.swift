/// The answers ``AsyncMedia/files(for:priority:answer:)`` still owes: ``cancel()`` withdraws them.
/// Dropping this object does not (a list fetched once for good needs nothing kept).
public final class FileListRequest: Sendable {
    private let stop: RunOnce

    init(stop: @escaping @Sendable () -> Void) {
        self.stop = RunOnce(stop)
    }

    /// Withdraws the claims not yet answered: downloads nobody else asked for stop, and their slots
    /// are free. No call to the answer closure begins after this returns, except one that another
    /// thread had already decided to make. Safe to call more than once, and from inside that closure.
    public func cancel() {
        stop.run()
    }
}
