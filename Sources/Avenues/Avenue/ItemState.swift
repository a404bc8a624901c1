/// What a row of an ``Avenue`` shows now.
public enum ItemState: Sendable, CustomStringConvertible {
    /// Nothing: the row was never prepared, was released, or its value is no longer stored.
    case empty
    /// The row's value is being made.
    case loading
    /// The row's value is readable with ``Avenue/item(at:)``.
    case loaded
    /// Making the row's value failed; preparing the row again retries.
    case failed(any Error)

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

    /// The error of a `.failed` state.
    public var error: (any Error)? {
        if case .failed(let error) = self { return error }
        return nil
    }

    /// `empty`, `loading`, `loaded` or `failed(<error>)`.
    public var description: String {
        switch self {
        case .empty: "empty"
        case .loading: "loading"
        case .loaded: "loaded"
        case .failed(let error): "failed(\(error))"
        }
    }
}
