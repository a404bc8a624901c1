/// Fetches many keys of a ``MultiplexerMap`` with one call to a back end that accepts several ids
/// (`/profiles/[id1,id2]`), sharing the map's cache and de-duplication.
///
/// ``values(for:)`` serves keys the map has fresh, joins keys the map is already fetching, and asks
/// the back end **once** for only the rest. While that call runs, single requests for those keys
/// (`map.value(for:)`) wait for it instead of fetching again. Every value lands in the map, as a
/// single fetch's does: unless its key was cleared, refreshed or set since the call began.
///
/// ```swift
/// let profiles = MultiplexerMap<String, Profile>(onFetch: api.profile)
/// let many = MultiRequester(map: profiles, onFetch: api.profiles)   // ([String]) -> [String: Profile]
/// let outcome = await many.values(for: ids)
/// ```
public final class MultiRequester<Key: LosslessStringConvertible & Hashable & Sendable, Value: Codable & Sendable>: Sendable {
    /// What a request gave: every value it has, and the first error if something failed.
    public struct Outcome: Sendable {
        /// The values found, joined or fetched, by key.
        public var values: [Key: Value]
        /// The first failure, if any key could not be had (the back end's, if its call failed).
        public var error: (any Error)?
        /// The keys asked for that have no value.
        public var missing: [Key]
    }

    /// The map whose cache is shared.
    public let map: MultiplexerMap<Key, Value>
    private let onFetch: @Sendable ([Key]) async throws -> [Key: Value]

    /// Creates a requester over `map`; `onFetch` asks the back end for several keys at once.
    public init(map: MultiplexerMap<Key, Value>, onFetch: @escaping @Sendable ([Key]) async throws -> [Key: Value]) {
        self.map = map
        self.onFetch = onFetch
    }

    /// The values for `keys`: cached ones at once, in-flight ones joined, and the rest from one back
    /// end call. On failure, returns what it has with the error (silenceable failures fall back to
    /// each key's cached copy, as in the map).
    public func values(for keys: [Key]) async -> Outcome {
        var seen = Set<Key>()
        let unique = keys.filter { seen.insert($0).inserted }
        let cache = map._core.cache
        var values: [Key: Value] = [:]
        var joining: [Key] = []
        var fetching: [Key] = []
        for key in unique {
            if let value = cache.freshValue(for: key) {
                values[key] = value
            } else if map._core.isInFlight(key) {
                joining.append(key)
            } else {
                fetching.append(key)
            }
        }

        // Before the back end is asked: what it answers is as old as this.
        let began = cache.freshness.now()
        let batch = MuxBatch<Key, Value>(began: began)
        if !fetching.isEmpty { map._core.batches.register(batch, for: fetching) }
        var firstError: (any Error)?
        await withTaskGroup(of: (Key, Result<Value, any Error>)?.self) { group in
            if !fetching.isEmpty {
                group.addTask { [onFetch, cache, fetching] in
                    do {
                        let answer = try await onFetch(fetching)
                        // Into the map at once (keys the back end added unasked too): a run that has
                        // not started yet finds the value fresh. Not over a clear, a refresh or a
                        // value set since the call began: those are newer.
                        for (key, value) in answer { cache.store(value, for: key, fetchedSince: began) }
                        batch.finish(.success(answer))
                    } catch {
                        batch.finish(.failure(error))
                    }
                    return nil
                }
            }
            for key in joining + fetching {
                group.addTask { [map] in
                    do {
                        return (key, .success(try await map.value(for: key)))
                    } catch {
                        return (key, .failure(error))
                    }
                }
            }
            for await result in group {
                guard let (key, outcome) = result else { continue }
                switch outcome {
                case .success(let value): values[key] = value
                case .failure(let error): firstError = firstError ?? error
                }
            }
        }
        // Only now: a run of these keys that started late must still find the batch (its failure, or
        // its missing keys), not fetch the key again on its own.
        if !fetching.isEmpty { map._core.batches.unregister(batch, for: fetching) }
        return Outcome(values: values, error: firstError, missing: unique.filter { values[$0] == nil })
    }
}
