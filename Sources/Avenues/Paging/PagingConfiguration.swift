/// How a ``PagedRows`` loads and keeps pages (Android Paging's `PagingConfig`, for terminal lists).
public struct PagingConfiguration: Sendable, Hashable {
    /// Rows per page asked of the source; 50 by default.
    public var pageSize: Int
    /// Rows beyond the visible ones, in the scroll direction, whose pages are prefetched; `pageSize`
    /// by default (rows on the other side: a quarter of it).
    public var prefetchDistance: Int
    /// Rows the first screen loads at once, from its first row; 3 × `pageSize` by default.
    public var initialLoadSize: Int
    /// The most rows kept in memory; pages farthest from the window are dropped beyond it (never a
    /// page inside the window and its prefetch distance), and loaded again when the user returns.
    /// 1,000 rows (20 pages) by default; at least what the smallest window holds in whole pages:
    /// `pageSize × (1 + ⌈prefetchDistance / pageSize⌉ + ⌈(prefetchDistance / 4) / pageSize⌉)`.
    public var maxResident: Int
    /// With an ``OffsetPageSource``: a window more than this many rows past the pages that can be
    /// walked to loads its pages directly by offset, and the pages between are never asked for;
    /// closer, pages are walked by cursor. 2 × `pageSize` by default.
    public var jumpThreshold: Int

    /// Creates a configuration; every parameter has the default described on its property. Huge
    /// values are taken as "as many as can be" (products are computed without overflow); a
    /// negative one is a programming error.
    public init(
        pageSize: Int = 50,
        prefetchDistance: Int? = nil,
        initialLoadSize: Int? = nil,
        maxResident: Int? = nil,
        jumpThreshold: Int? = nil
    ) {
        precondition(pageSize >= 1, "PagingConfiguration.pageSize must be at least 1")
        precondition((prefetchDistance ?? 0) >= 0, "PagingConfiguration.prefetchDistance must not be negative")
        precondition((initialLoadSize ?? 0) >= 0, "PagingConfiguration.initialLoadSize must not be negative")
        precondition((maxResident ?? 0) >= 0, "PagingConfiguration.maxResident must not be negative")
        precondition((jumpThreshold ?? 0) >= 0, "PagingConfiguration.jumpThreshold must not be negative")
        let prefetch = prefetchDistance ?? pageSize
        self.pageSize = pageSize
        self.prefetchDistance = prefetch
        self.initialLoadSize = max(1, initialLoadSize ?? Saturating.multiply(3, pageSize))
        // A window is loaded in whole pages: one visible, and the pages its prefetch distance
        // reaches either way. A smaller bound (it was `pageSize + 2 × prefetchDistance`: 90 rows
        // with pages of 50 and a distance of 20, for a window of 150) was exceeded by every window.
        let windowPages = Saturating.add(1, Saturating.add(Self.pages(prefetch, pageSize), Self.pages(prefetch / 4, pageSize)))
        self.maxResident = max(maxResident ?? 1_000, Saturating.multiply(pageSize, windowPages))
        self.jumpThreshold = jumpThreshold ?? Saturating.multiply(2, pageSize)
    }

    /// The pages `rows` rows take, rounded up (as the window counts them).
    static func pages(_ rows: Int, _ size: Int) -> Int {
        rows / size + (rows % size == 0 ? 0 : 1)
    }
}

/// How many rows a ``PagedRows`` has: exactly so many, or at least so many while the end of the
/// list has not been seen (a status line shows "≥ N").
public enum RowCount: Sendable, Hashable, CustomStringConvertible {
    /// Exactly this many rows.
    case exact(Int)
    /// At least this many rows; more may follow.
    case atLeast(Int)

    /// The rows known to exist.
    public var value: Int {
        switch self {
        case .exact(let count), .atLeast(let count): count
        }
    }

    /// `true` for `.exact`.
    public var isExact: Bool {
        if case .exact = self { return true }
        return false
    }

    /// `"1234"` or `"≥ 1234"`.
    public var description: String {
        switch self {
        case .exact(let count): "\(count)"
        case .atLeast(let count): "≥ \(count)"
        }
    }
}

/// Whether pages are being loaded in one direction of a ``PagedRows``.
public enum PageLoadState: Sendable, CustomStringConvertible {
    /// Nothing is loading; more may be loaded when the user moves.
    case idle
    /// A page is loading.
    case loading
    /// Loading a page failed; it is tried again when the user moves (after its retry wait, unless it
    /// failed for good), or at once by ``PagedRows/retry()``.
    case failed(any Error)
    /// There is nothing more in this direction.
    case endReached

    /// `idle`, `loading`, `failed(<error>)` or `end`.
    public var description: String {
        switch self {
        case .idle: "idle"
        case .loading: "loading"
        case .failed(let error): "failed(\(error))"
        case .endReached: "end"
        }
    }
}

/// The load states of a ``PagedRows``: the visible pages, the pages before them and after them.
public struct PageLoadStates: Sendable, CustomStringConvertible {
    /// The pages of the visible rows (after ``PagedRows/refresh()``, their new generation).
    public var refresh: PageLoadState
    /// The pages before the visible rows.
    public var before: PageLoadState
    /// The pages after the visible rows.
    public var after: PageLoadState

    /// `refresh: …, before: …, after: …`.
    public var description: String { "refresh: \(refresh), before: \(before), after: \(after)" }
}
