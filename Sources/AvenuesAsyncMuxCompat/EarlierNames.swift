import Avenues
import Foundation

// The names that renames replaced (CHANGELOG.md, "One dialect"): AsyncMux's spellings, and earlier
// spellings of this library. Each is deprecated and forwards to its replacement, so code written for
// AsyncMux compiles with one more import, `import AvenuesAsyncMuxCompat`, while `import Avenues` alone
// shows the current names — and, deprecated, the seeds' names DESIGN.md lists as contract
// (Avenues/SeedNames.swift). Only public API is used: this module adds no behaviour.

// MARK: Paging

extension PagedRows {
    /// ``Avenues/PagedRows/subscribe()``: a property that made a new subscription on every access
    /// read as if it returned one shared sequence.
    @available(*, deprecated, renamed: "subscribe()")
    public var changes: PagedRowsChanges { subscribe() }
}

// MARK: Multiplexers

extension Multiplexer {
    /// ``Avenues/Multiplexer/set(_:)``: a value is put with `set` everywhere (CONTRIBUTING.md).
    @available(*, deprecated, renamed: "set(_:)")
    public func store(_ value: Value) { set(value) }
}

extension MultiplexerMap {
    /// Creates a map with `memoryLimit` for `countLimit` (a count is a `countLimit` everywhere,
    /// CONTRIBUTING.md).
    @available(*, deprecated, renamed: "init(cacheKey:timeToLive:countLimit:maxConcurrentFetches:rateLimit:directory:clock:onFetch:)")
    public convenience init(
        cacheKey: String? = nil,
        timeToLive: Duration = .seconds(30 * 60),
        memoryLimit: Int,
        maxConcurrentFetches: Int = 16,
        rateLimit: RateLimit? = nil,
        directory: URL? = nil,
        clock: MuxClock = .system,
        onFetch: @escaping @Sendable (Key) async throws -> Value
    ) {
        self.init(
            cacheKey: cacheKey, timeToLive: timeToLive, countLimit: memoryLimit, maxConcurrentFetches: maxConcurrentFetches,
            rateLimit: rateLimit, directory: directory, clock: clock, onFetch: onFetch
        )
    }

    /// ``Avenues/MultiplexerMap/set(_:for:)``: a value is put with `set` everywhere (CONTRIBUTING.md).
    @available(*, deprecated, renamed: "set(_:for:)")
    public func store(_ value: Value, for key: Key) { set(value, for: key) }
}

extension MultiRequester {
    /// ``Avenues/MultiRequester/values(for:)``: keys are labelled `for:` and values asked for with
    /// `value` everywhere (CONTRIBUTING.md).
    @available(*, deprecated, renamed: "values(for:)")
    public func request(keys: [Key]) async -> Outcome { await values(for: keys) }
}

extension MuxRepository {
    /// AsyncMux's spelling, `MuxRepository.shared.saveAll()`: the same operations.
    @available(*, deprecated, message: "call MuxRepository.saveAll(), clearAll() and clearMemory() directly")
    public static let shared = Shared()

    /// Forwards to ``Avenues/MuxRepository``'s static operations, under the names of AsyncMux's
    /// actor-based API.
    public struct Shared: Sendable {
        /// Saves every registered multiplexer's memory copies to disk and returns the failures — the
        /// same as ``Avenues/MuxRepository/saveAll()``, spelled as AsyncMux's actor-based API spells it.
        @discardableResult
        public func saveAll() -> [DiskStorageError] { MuxRepository.saveAll() }
        /// Deletes every registered multiplexer's memory and disk copies and cancels their fetches —
        /// the same as ``Avenues/MuxRepository/clearAll()``.
        public func clearAll() { MuxRepository.clearAll() }
        /// Drops every registered multiplexer's memory copies, keeping the disk copies — the same as
        /// ``Avenues/MuxRepository/clearMemory()``.
        public func clearMemory() { MuxRepository.clearMemory() }
    }
}

// MARK: Media

extension AsyncMedia {
    /// ``Avenues/AsyncMedia/progress(for:)``: a URL is a key, labelled `for:` everywhere (CONTRIBUTING.md).
    @available(*, deprecated, renamed: "progress(for:)")
    public func progress(url: URL) -> AsyncStream<DownloadProgress> { progress(for: url) }

    /// Downloads through ``Avenues/AsyncMedia/shared``, as AsyncMux spells it:
    /// `AsyncMedia.shared.file(for: url)`.
    @available(*, deprecated, message: "use AsyncMedia.shared.file(for:), or an instance with a folder of your own")
    public static func request(url: URL) async throws -> URL { try await shared.file(for: url) }

    /// The file ``Avenues/AsyncMedia/shared`` holds for `url`, as AsyncMux spells it:
    /// `AsyncMedia.shared.cachedFile(for: url)`.
    @available(*, deprecated, message: "use AsyncMedia.shared.cachedFile(for:)")
    public static func cachedValue(url: URL) -> URL? { shared.cachedFile(for: url) }

    /// Deletes every file ``Avenues/AsyncMedia/shared`` downloaded and cancels its downloads, as
    /// AsyncMux spells it: `AsyncMedia.shared.clear()`.
    @available(*, deprecated, message: "use AsyncMedia.shared.clear()")
    public static func clear() { shared.clear() }
}
