import Foundation

// The seeds' names that DESIGN.md lists as contract: code and tests written against the design (and
// AsyncMux's README usage) call them with `import Avenues` alone, so they stay in this module,
// deprecated, each forwarding to the one current name. The other earlier spellings, which no contract
// names, live in the migration module AvenuesAsyncMuxCompat.

extension ProcessingState {
    /// The former name of ``idle``, which read ambiguously beside `Optional.none`.
    @available(*, deprecated, renamed: "idle")
    public static var none: ProcessingState { .idle }
}

extension AutoProcessor {
    /// ``cancel(for:)``: a key is labelled `for:` everywhere (CONTRIBUTING.md).
    @available(*, deprecated, renamed: "cancel(for:)")
    public func cancel(_ key: Key) { cancel(for: key) }

    /// ``state(for:)``: a key is labelled `for:` everywhere (CONTRIBUTING.md).
    @available(*, deprecated, renamed: "state(for:)")
    public func state(of key: Key) -> ProcessingState { state(for: key) }
}

extension Avenue {
    /// ``cancel(for:)``: a key is labelled `for:` and a row `at:` everywhere (CONTRIBUTING.md).
    @available(*, deprecated, renamed: "cancel(for:)")
    public func cancelProcessing(of key: Key) { cancel(for: key) }

    /// ``subscribe()``: a property that made a new subscription on every access read as if it
    /// returned one shared sequence.
    @available(*, deprecated, renamed: "subscribe()")
    public var changes: AvenueChanges<Index> { subscribe() }
}

extension Multiplexer {
    /// ``value()``: a value is asked for with `value` everywhere (CONTRIBUTING.md); AsyncMux's name.
    @available(*, deprecated, renamed: "value()")
    public func request() async throws -> Value { try await value() }
}

extension MultiplexerMap {
    /// ``value(for:)``: a value is asked for with `value(for:)` everywhere (CONTRIBUTING.md);
    /// AsyncMux's name.
    @available(*, deprecated, renamed: "value(for:)")
    public func request(key: Key) async throws -> Value { try await value(for: key) }

    /// ``refresh(for:)``: a key is labelled `for:` everywhere (CONTRIBUTING.md).
    @available(*, deprecated, renamed: "refresh(for:)")
    @discardableResult
    public func refresh(key: Key) -> MultiplexerMap<Key, Value> { refresh(for: key) }

    /// ``clear(for:)``: a key is labelled `for:` everywhere (CONTRIBUTING.md).
    @available(*, deprecated, renamed: "clear(for:)")
    public func clear(key: Key) { clear(for: key) }
}

extension AsyncMedia {
    /// ``file(for:)``: a URL is a key, labelled `for:` everywhere (CONTRIBUTING.md); AsyncMux's name.
    @available(*, deprecated, renamed: "file(for:)")
    public func request(url: URL) async throws -> URL { try await file(for: url) }

    /// ``cachedFile(for:)``: a URL is a key, labelled `for:` everywhere (CONTRIBUTING.md).
    @available(*, deprecated, renamed: "cachedFile(for:)")
    public func cachedValue(url: URL) -> URL? { cachedFile(for: url) }
}
