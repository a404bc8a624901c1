@testable import Avenues

import Testing

/// A processor whose every run waits until the test finishes it, so tests decide the order of
/// events instead of guessing timings.
final class ControlledWork<Key: Hashable & Sendable, Value: Sendable>: Processor {
    private struct Pending {
        let id: Int
        let continuation: CheckedContinuation<Value, any Error>
    }

    private struct State {
        var nextID = 0
        var starts: [Key: Int] = [:]
        var order: [Key] = []
        var cancellationsSeen: [Key: Int] = [:]
        var pending: [Key: [Pending]] = [:]
        var availableOffline: Set<Key> = []
        var offlineQuestions = 0
    }

    /// When false, a run keeps going after its task is cancelled (a processor that ignores
    /// cancellation), so the test can finish it late.
    let honoursCancellation: Bool
    private let state = Locked(State())
    /// Every start, in order; tests await on it.
    let startLog = EventLog<Key>()

    init(honoursCancellation: Bool = true) {
        self.honoursCancellation = honoursCancellation
    }

    /// Says the keys in `keys` are made without the network (as a cache of its own would).
    func makeAvailableOffline(_ keys: Set<Key>) {
        state.withLock { $0.availableOffline = keys }
    }

    /// How many times ``isAvailableOffline(_:)`` was asked.
    var offlineQuestions: Int { state.withLock { $0.offlineQuestions } }

    func isAvailableOffline(_ key: Key) -> Bool {
        state.withLock { state in
            state.offlineQuestions += 1
            return state.availableOffline.contains(key)
        }
    }

    func process(_ key: Key) async throws -> Value {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let cancelledAlready = state.withLock { state -> Bool in
                    state.starts[key, default: 0] += 1
                    state.order.append(key)
                    if Task.isCancelled {
                        state.cancellationsSeen[key, default: 0] += 1
                        if honoursCancellation { return true }
                    }
                    state.pending[key, default: []].append(Pending(id: id, continuation: continuation))
                    return false
                }
                startLog.append(key)
                if cancelledAlready { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let cancelled = state.withLock { state -> Pending? in
                guard state.pending[key]?.contains(where: { $0.id == id }) == true else { return nil }
                state.cancellationsSeen[key, default: 0] += 1
                guard honoursCancellation, var list = state.pending[key], let slot = list.firstIndex(where: { $0.id == id }) else {
                    return nil
                }
                let removed = list.remove(at: slot)
                // No empty list left behind: `pendingKeys` lists only keys with a run pending.
                state.pending[key] = list.isEmpty ? nil : list
                return removed
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Finishes the oldest pending run of `key`; false if none is pending.
    @discardableResult
    func finish(_ key: Key, with result: Result<Value, any Error>) -> Bool {
        let pending = state.withLock { state -> Pending? in
            guard var list = state.pending[key], !list.isEmpty else { return nil }
            let first = list.removeFirst()
            state.pending[key] = list.isEmpty ? nil : list
            return first
        }
        pending?.continuation.resume(with: result)
        return pending != nil
    }

    @discardableResult
    func succeed(_ key: Key, with value: Value) -> Bool { finish(key, with: .success(value)) }

    @discardableResult
    func fail(_ key: Key, with error: any Error) -> Bool { finish(key, with: .failure(error)) }

    func starts(of key: Key) -> Int { state.withLock { $0.starts[key] ?? 0 } }
    /// The keys with a run waiting to be finished, in no particular order.
    var pendingKeys: [Key] { state.withLock { Array($0.pending.keys) } }
    /// The keys with more than one run waiting to be finished at once, with how many.
    var keysPendingMoreThanOnce: [Key: Int] { state.withLock { $0.pending.compactMapValues { $0.count > 1 ? $0.count : nil } } }
    var totalStarts: Int { state.withLock { $0.order.count } }
    var startOrder: [Key] { state.withLock { $0.order } }
    func cancellationsSeen(by key: Key) -> Int { state.withLock { $0.cancellationsSeen[key] ?? 0 } }

    /// Waits until `key` has started `count` times in all.
    func waitUntilStarted(_ key: Key, times count: Int = 1) async {
        await startLog.wait(for: key, times: count)
    }
}

struct TestError: Error, Equatable, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
