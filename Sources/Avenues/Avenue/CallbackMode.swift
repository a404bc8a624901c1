import Dispatch

/// Where an ``Avenue`` calls `onStateChange` and `onError`.
///
/// Whatever the mode, the callbacks of one avenue never run concurrently, and no thread waits for
/// another's callbacks. A row is told nothing about a load after ``Avenue/cancel(at:)`` for it has
/// returned — exactly when the cancel is made on the callbacks' queue or actor (or from a callback);
/// see ``Avenue/cancel(at:)`` for cancels from other threads.
public enum CallbackMode: Sendable {
    /// On the thread that finished the work, right away (the default). Cheapest; the callbacks must
    /// be thread-safe and quick.
    case completingThread
    /// Asynchronously on the given queue.
    case queue(DispatchQueue)
    /// Asynchronously on the main actor (the main dispatch queue). The program must run the main
    /// queue: an `async` `main`, `dispatchMain()`, or a run loop.
    case mainActor

    @inlinable
    func run(_ body: @escaping @Sendable () -> Void) {
        switch self {
        case .completingThread: body()
        case .queue(let queue): queue.async(execute: body)
        case .mainActor: DispatchQueue.main.async(execute: body)
        }
    }
}
