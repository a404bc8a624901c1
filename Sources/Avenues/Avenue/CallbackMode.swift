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
    /// queue: an `async` `main`, `dispatchMain()`, or a run loop. The handlers' type says nothing of
    /// it; set them with ``Avenue/onStateChange(onMainActor:)`` and ``Avenue/onError(onMainActor:)``
    /// to write `@MainActor` closures.
    case mainActor

    @inlinable
    func run(_ body: @escaping @Sendable () -> Void) {
        switch self {
        case .completingThread: body()
        case .queue(let queue): queue.async(execute: body)
        case .mainActor: DispatchQueue.main.async(execute: body)
        }
    }

    /// Runs `body` on the main actor from a callback made in this mode: at once under `.mainActor`
    /// (the callback already runs on the main queue), else in order on the main queue.
    func runOnMainActor(_ body: @escaping @MainActor @Sendable () -> Void) {
        if case .mainActor = self {
            MainActor.assumeIsolated(body)
        } else {
            DispatchQueue.main.async { MainActor.assumeIsolated(body) }
        }
    }
}
