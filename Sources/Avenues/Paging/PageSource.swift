/// Where the rows of a ``PagedRows`` come from, a page at a time: a back end's `?page=` or cursor
/// endpoint, `git log`, a database query, a directory crawl.
///
/// The first page is asked with ``PageRequest/Position/start``, the next ones with the cursor the
/// previous page gave (``Page/cursorAfter``); a page with no `cursorAfter` ends the list, and so does
/// a full page whose `cursorAfter` is the cursor it was asked with (asked again, it would come again),
/// or the cursor an earlier page gave (a "next" link pointing back would go round for ever: the
/// list ends there and ``PageSourceLoopError`` is reported).
/// Every page but the last holds exactly the requested number of items, so row `n` is always on
/// page `n / size`.
///
/// ```swift
/// struct Issues: PageSource {
///     func page(_ request: PageRequest<String>) async throws -> Page<String, Issue> {
///         let response = try await api.issues(after: request.cursor, first: request.size)
///         return Page(items: response.issues, cursorAfter: response.endCursor)
///     }
/// }
/// ```
public protocol PageSource<Item>: Sendable {
    /// What a page gives to reach the next one (a token, an id, an offset).
    associatedtype Cursor: Hashable & Sendable
    /// A row.
    associatedtype Item: Sendable

    /// The page at `request.position` with `request.size` items (fewer only at the end of the
    /// list). Should honour task cancellation: a page nobody wants any more is cancelled.
    func page(_ request: PageRequest<Cursor>) async throws -> Page<Cursor, Item>
}

/// A ``PageSource`` that can start at any row (SQL `OFFSET`, `?page=`, `git log --skip`): a jump
/// (the end of the list, a search hit, a typed row number) loads the target page directly instead
/// of walking there page by page.
///
/// A source whose cursor is the next row's offset declares `Cursor = Int` (and its `Item`) and
/// writes only ``page(at:size:)``; ``PageSource/page(_:)`` then comes from that.
///
/// ```swift
/// struct Rows: OffsetPageSource {
///     typealias Cursor = Int
///     typealias Item = Row
///     func page(at offset: Int, size: Int) async throws -> Page<Int, Row> {
///         let rows = try await database.rows(offset: offset, limit: size)
///         return Page(items: rows, cursorAfter: rows.count == size ? offset + size : nil)
///     }
/// }
/// ```
public protocol OffsetPageSource<Item>: PageSource {
    /// The page of `size` items starting at row `offset` (fewer only at the end of the list).
    func page(at offset: Int, size: Int) async throws -> Page<Cursor, Item>
}

extension OffsetPageSource where Cursor == Int {
    /// Pages by offset: the cursor after a page is the row that follows it.
    public func page(_ request: PageRequest<Int>) async throws -> Page<Int, Item> {
        switch request.position {
        case .start: try await page(at: 0, size: request.size)
        case .after(let offset): try await page(at: offset, size: request.size)
        }
    }
}

/// What a ``PageSource`` is asked for.
public struct PageRequest<Cursor: Hashable & Sendable>: Sendable, Hashable {
    /// Where the page starts.
    public enum Position: Sendable, Hashable {
        /// The first page of the list.
        case start
        /// The page after the one that gave this cursor.
        case after(Cursor)
    }

    /// Where the page starts.
    public var position: Position
    /// How many items it should hold.
    public var size: Int

    /// A request.
    public init(position: Position, size: Int) {
        self.position = position
        self.size = size
    }

    /// The cursor to start after, or `nil` for the first page.
    public var cursor: Cursor? {
        if case .after(let cursor) = position { return cursor }
        return nil
    }
}

/// A page of rows, as a ``PageSource`` returns it.
public struct Page<Cursor: Hashable & Sendable, Item: Sendable>: Sendable {
    /// The rows, in order.
    public var items: [Item]
    /// What to ask for the next page, or `nil` when this is the last one.
    public var cursorAfter: Cursor?
    /// How many rows follow this page, if the source knows: the count is then exact before the
    /// end is loaded (and a jump to the end can load it directly).
    public var itemsAfter: Int?

    /// A page; `cursorAfter` `nil` ends the list.
    public init(items: [Item], cursorAfter: Cursor?, itemsAfter: Int? = nil) {
        self.items = items
        self.cursorAfter = cursorAfter
        self.itemsAfter = itemsAfter
    }
}

extension Page: Codable where Cursor: Codable, Item: Codable {}
