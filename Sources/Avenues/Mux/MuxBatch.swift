/// One multi-key fetch that the per-key runs of its keys wait on, so a key is never fetched twice
/// while a ``MultiRequester`` is fetching it.
@usableFromInline
final class MuxBatch<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private enum State {
        case pending(next: UInt64, waiters: [UInt64: UnsafeContinuation<[Key: Value], any Error>])
        case finished(Result<[Key: Value], any Error>)
    }

    private let state = Locked(State.pending(next: 0, waiters: [:]))
    /// When the back end was asked (the multiplexer's clock): its answer is as old as this.
    @usableFromInline let began: Duration

    init(began: Duration) {
        self.began = began
    }

    /// Hands the back end's answer (or failure) to every run waiting.
    func finish(_ result: Result<[Key: Value], any Error>) {
        let waiters = state.withLock { state -> [UnsafeContinuation<[Key: Value], any Error>] in
            guard case .pending(_, let waiters) = state else { return [] }
            state = .finished(result)
            return Array(waiters.values)
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    /// The value for `key` once the batch is done. Honours cancellation of the waiting run.
    @usableFromInline
    func value(for key: Key) async throws -> Value {
        let answer = try await results()
        guard let value = answer[key] else { throw MissingValueError(key: "\(key)") }
        return value
    }

    private func results() async throws -> [Key: Value] {
        let id = state.withLock { state -> UInt64? in
            guard case .pending(let next, let waiters) = state else { return nil }
            state = .pending(next: next + 1, waiters: waiters)
            return next
        }
        guard let id else { return try finishedResult() }
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<[Key: Value], any Error>? in
                    switch state {
                    case .finished(let result):
                        return result
                    case .pending(let next, var waiters):
                        if Task.isCancelled { return .failure(CancellationError()) }
                        waiters[id] = continuation
                        state = .pending(next: next, waiters: waiters)
                        return nil
                    }
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            let cancelled = state.withLock { state -> UnsafeContinuation<[Key: Value], any Error>? in
                guard case .pending(let next, var waiters) = state, let waiter = waiters.removeValue(forKey: id) else { return nil }
                state = .pending(next: next, waiters: waiters)
                return waiter
            }
            cancelled?.resume(throwing: CancellationError())
        }
    }

    private func finishedResult() throws -> [Key: Value] {
        let result = state.withLock { state -> Result<[Key: Value], any Error>? in
            if case .finished(let result) = state { return result }
            return nil
        }
        guard let result else { preconditionFailure("Invalid state: a batch is neither pending nor finished") }
        return try result.get()
    }
}

/// The batches fetching keys now, by key (``MultiRequester`` registers them; a run finds its key's).
@usableFromInline
final class MuxBatches<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let batches = Locked([Key: MuxBatch<Key, Value>]())

    init() {}

    /// The batch fetching `key`, if one is.
    @usableFromInline
    func batch(for key: Key) -> MuxBatch<Key, Value>? {
        batches.withLock { $0[key] }
    }

    func register(_ batch: MuxBatch<Key, Value>, for keys: [Key]) {
        batches.withLock { batches in
            for key in keys { batches[key] = batch }
        }
    }

    func unregister(_ batch: MuxBatch<Key, Value>, for keys: [Key]) {
        batches.withLock { batches in
            for key in keys where batches[key] === batch { batches[key] = nil }
        }
    }
}
