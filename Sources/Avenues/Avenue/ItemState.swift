/// What a row of an ``Avenue`` shows now.
public enum ItemState: Sendable, CustomStringConvertible {
    /// Nothing: the row was never prepared, was released, or its value is no longer stored.
    case empty
    /// The row's value is being made; nothing is shown yet.
    case loading
    /// The row's value is readable with ``Avenue/item(at:)``.
    case loaded
    /// An outdated value is shown (readable with ``Avenue/item(at:)``): a fresh one is being loaded
    /// (`revalidating`), or loading it failed (`error`) and the outdated one stays.
    case stale(revalidating: Bool, error: (any Error)?)
    /// Making the row's value failed. A visible row is tried again by its avenue at `retryAt` (or a
    /// second after the failure, if that is later); any row is tried again when prepared at or after
    /// `retryAt`. `nil` when the key failed too often, or failed for good (``PermanentError``), and
    /// only ``Avenue/retry(at:)`` tries again.
    case failed(any Error, retryAt: ContinuousClock.Instant?)

    /// `true` for `.loaded`.
    public var isLoaded: Bool {
        if case .loaded = self { return true }
        return false
    }

    /// `true` for `.loading`.
    public var isLoading: Bool {
        if case .loading = self { return true }
        return false
    }

    /// `true` for `.stale`: a value is shown, but it is outdated.
    public var isStale: Bool {
        if case .stale = self { return true }
        return false
    }

    /// `true` when ``Avenue/item(at:)`` has a value to show (`.loaded` or `.stale`).
    public var hasValue: Bool { isLoaded || isStale }

    /// The error of a `.failed` state, or of a `.stale` one whose revalidation failed.
    public var error: (any Error)? {
        switch self {
        case .failed(let error, _): error
        case .stale(_, let error): error
        default: nil
        }
    }

    /// When preparing a `.failed` row tries again.
    public var retryAt: ContinuousClock.Instant? {
        if case .failed(_, let retryAt) = self { return retryAt }
        return nil
    }

    /// `empty`, `loading`, `loaded`, `stale(…)` or `failed(<error>)`.
    public var description: String {
        switch self {
        case .empty: "empty"
        case .loading: "loading"
        case .loaded: "loaded"
        case .stale(let revalidating, let error):
            "stale(" + (revalidating ? "revalidating" : error.map { "failed: \($0)" } ?? "kept") + ")"
        case .failed(let error, _): "failed(\(error))"
        }
    }
}
