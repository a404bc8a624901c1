// Inlinable: `request` and the run path (see benchmarks "Multiplexer.value() cache hit" and "100,000 distinct keys: MultiplexerMap.value(for:)"). The disk, save and clear paths are not.
/// A ``MuxCache`` and the fetching around it: each key is fetched by one run at a time, through an
/// ``AutoProcessor``, however many callers ask.
///
/// A run is keyed by the key and its **epoch** (``MuxCache/epoch(for:)``), which a refresh or clear
/// of the key moves on: a request made after a refresh never joins a fetch that started before it,
/// and that older fetch gives its value to its own callers without storing it.
@usableFromInline
final class MuxCore<Key: Hashable & Sendable, Value: Codable & Sendable>: Sendable {
    @usableFromInline let cache: MuxCache<Key, Value>
    @usableFromInline let fetcher: AutoProcessor<MuxRunKey<Key>, Value>
    /// Keys a multi-key request is fetching; their runs wait for it instead of fetching alone.
    @usableFromInline let batches: MuxBatches<Key, Value>
    /// Keys whose back end asked to wait (a ``RetryAfterError``).
    @usableFromInline let gate = RetryGate<Key>()

    /// What the fetcher runs for each run key: ``run(_:cache:batches:fetch:)`` bound to a fetch.
    @usableFromInline
    typealias Runner = @Sendable (MuxRunKey<Key>, MuxCache<Key, Value>, MuxBatches<Key, Value>) async throws -> Value

    /// A core whose runs are `runner`: pass ``runner(fetch:)`` made in the client's inlined
    /// initializer, so the miss path runs specialized there too.
    @usableFromInline
    init(cache: MuxCache<Key, Value>, maxConcurrent: Int, rateLimit: RateLimit? = nil, runner: @escaping Runner) {
        self.cache = cache
        let batches = MuxBatches<Key, Value>()
        self.batches = batches
        fetcher = AutoProcessor(maxConcurrent: maxConcurrent, rateLimit: rateLimit) { [cache] run in
            try await runner(run, cache, batches)
        }
    }

    /// ``run(_:cache:batches:fetch:)`` bound to `fetch`. Inlinable so that a multiplexer's initializer,
    /// inlined in its client, makes it there: unspecialized, every miss spent a third of its time
    /// looking up generic metadata (see the `multiplexer-map-miss` rows of "Instruction counts" in
    /// Benchmarks/README.md).
    @inlinable
    static func runner(fetch: @escaping @Sendable (Key) async throws -> Value) -> Runner {
        { run, cache, batches in try await Self.run(run, cache: cache, batches: batches, fetch: fetch) }
    }

    /// A fresh memory copy at once; otherwise joins (or starts) the key's run of this epoch, at
    /// `.visible`, or at `priority` (an avenue row's run, through ``MultiplexerMap``'s
    /// `process(_:priority:)`), following its changes. Inlinable, so a hit runs specialized in the
    /// caller.
    @inlinable
    func request(_ key: Key, priority: RunPriority? = nil) async throws -> Value {
        if let value = cache.freshValue(for: key) { return value }
        return try await fetch(key, priority: priority)
    }

    /// The miss path of ``request(_:priority:)``: the back end's Retry-After gate, then the key's run
    /// of this epoch, in the `AutoProcessor` specialized here (unspecialized, many callers of one
    /// fetch took well over twice a plain continuation list: see "Latest figures" in
    /// Benchmarks/README.md). Never inlined into the hit path: with its claim's cancellation handler
    /// and continuation inlined, a hit's async frame outgrew a task's first slab, and each batch of
    /// hits allocated one (`gate-multiplexer-hit`). The price: a hit is an async call of its own,
    /// about 100 instructions ("Instruction counts" in Benchmarks/README.md).
    @inlinable @inline(never)
    func fetch(_ key: Key, priority: RunPriority?) async throws -> Value {
        if let error = gate.blocked(key) {
            // The back end asked to wait: the cached copy of any age, else its answer, without asking.
            if let fallback = cache.anyCopy(for: key) { return fallback }
            throw error
        }
        do {
            let value = try await fetcher.value(for: runKey(for: key), priority: priority?.value ?? .visible, following: priority)
            gate.open(key)
            return value
        } catch let cycle as AutoProcessorCycleError {
            // Named by the map's keys, not by the runs' (a key and its refresh epoch).
            throw AutoProcessorCycleError(key: (cycle.key as? MuxRunKey<Key>)?.key ?? cycle.key, asker: (cycle.asker as? MuxRunKey<Key>)?.key ?? cycle.asker)
        } catch {
            gate.note(error, for: key)
            throw error
        }
    }

    /// The run a request for `key` would join now.
    @usableFromInline
    func runKey(for key: Key) -> MuxRunKey<Key> {
        MuxRunKey(key: key, epoch: cache.epoch(for: key))
    }

    /// Whether a fetch of `key` that a request made now would join is queued or running.
    func isInFlight(_ key: Key) -> Bool {
        fetcher.state(for: runKey(for: key)) != .idle
    }

    /// Hard clear, including fetches in flight: their callers receive `CancellationError`, and a
    /// value one of them fetched is never stored after the clear (the clear moved the epoch on).
    func clear(_ key: Key?) {
        clear(key) {}
    }

    /// ``clear(_:)``, running `afterTheEpochMoved` between its two steps (tests run a request there).
    func clear(_ key: Key?, afterTheEpochMoved: () -> Void) {
        let epoch = cache.clear(key)
        afterTheEpochMoved()
        // Only the fetches that began before the clear: a request made since (on another thread,
        // while this one cleared) belongs to the clear's epoch or a later one, and its fetch cannot
        // bring back a value from before the clear. Epoch numbers only grow.
        fetcher.cancel { $0.epoch < epoch && (key == nil || $0.key == key) }
    }

    /// One run: a copy still fresh (stored by another run while this one was queued, or on disk on a
    /// cold start), else the fetch (or the batch fetching this key), else — after a silenceable
    /// failure — the fallback copy. The disk is read here, off the callers' threads, once for all
    /// callers of the key.
    @inlinable
    static func run(
        _ run: MuxRunKey<Key>, cache: MuxCache<Key, Value>, batches: MuxBatches<Key, Value>,
        fetch: @Sendable (Key) async throws -> Value
    ) async throws -> Value {
        let key = run.key
        if let value = cache.freshCopy(for: key) { return value }
        // A batch asked before this key was cleared or refreshed is older than this run may take:
        // fetch alone. A batch's answer is as old as the batch.
        let batch = batches.batch(for: key).flatMap { cache.wasRefreshed(key, since: $0.began) ? nil : $0 }
        let began = batch?.began ?? cache.freshness.now()
        do {
            let value: Value
            if let batch {
                value = try await batch.value(for: key)
            } else {
                value = try await fetch(key)
            }
            try Task.checkCancellation()  // abandoned meanwhile: do not store
            cache.store(value, for: key, epoch: run.epoch, began: began)
            return value
        } catch {
            if error is CancellationError || Task.isCancelled { throw error }
            guard error.isSilenceable else { throw error }
            if let fallback = cache.anyCopy(for: key) { return fallback }
            throw error.unwrappingSilenceable
        }
    }
}

/// What a multiplexer's processor runs: a key in one refresh epoch.
@usableFromInline
struct MuxRunKey<Key: Hashable & Sendable>: Hashable, Sendable {
    @usableFromInline let key: Key
    @usableFromInline let epoch: UInt64
    @inlinable init(key: Key, epoch: UInt64) { (self.key, self.epoch) = (key, epoch) }
}
