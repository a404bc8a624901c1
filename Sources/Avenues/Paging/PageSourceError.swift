/// A ``PageSource`` broke the paging contract (``PagedRows`` detects it, reports it once through
/// ``PagedRows/subscribe()`` and ``PagedRows/onChange``, and keeps the list usable).
public enum PageSourceError: Error, Hashable, Sendable, CustomStringConvertible, PageContractBreach {
    /// A page held more items than asked: the extra items were dropped, so the rows after them
    /// are missing from the list.
    case tooManyItems(page: Int, asked: Int, got: Int)
    /// A page that is not the last held fewer items than asked, and the pages after it (asked with
    /// its cursor to complete it) gave nothing more: the list ends there.
    case shortPage(page: Int, asked: Int, got: Int)
    /// A page said a negative number of items follow it: the number was ignored.
    case negativeItemsAfter(page: Int, value: Int)

    /// The page, counted from 0.
    public var page: Int {
        switch self {
        case .tooManyItems(let page, _, _), .shortPage(let page, _, _), .negativeItemsAfter(let page, _): page
        }
    }

    /// What happened and what to do.
    public var description: String {
        switch self {
        case .tooManyItems(let page, let asked, let got):
            "The page source returned \(got) items for page \(page) when asked for \(asked); the extra \(got - asked) were dropped. Return at most `request.size` items."
        case .shortPage(let page, let asked, let got):
            "The page source returned \(got) of \(asked) items for page \(page) with a cursor after it, and nothing more after that cursor; the list ends there. Return `request.size` items on every page but the last, and no cursor after the last."
        case .negativeItemsAfter(let page, let value):
            "The page source said \(value) items follow page \(page); a count cannot be negative, so it was ignored. Return nil when the count is not known."
        }
    }
}

/// A ``PageSource`` gave, after page `page`, the cursor it had given after an earlier page (a "next"
/// link pointing back): walked on, the list would repeat pages `loopsTo` through `page` for ever,
/// and a jump or a filter past them would ask the source without end. ``PagedRows`` ends the list at
/// `page` and reports this once, as it reports a ``PageSourceError``; a ``FilteredRows`` scan ends
/// there too.
public struct PageSourceLoopError: Error, Hashable, Sendable, CustomStringConvertible, PageContractBreach {
    /// The page, counted from 0, whose cursor was an earlier one.
    public let page: Int
    /// The page that cursor reached before.
    public let loopsTo: Int

    /// A loop from `page` back to `loopsTo`.
    public init(page: Int, loopsTo: Int) {
        (self.page, self.loopsTo) = (page, loopsTo)
    }

    /// What happened and what to do.
    public var description: String {
        "The page source gave, after page \(page), the cursor it had given before page \(loopsTo): walked on, the list would repeat pages \(loopsTo)–\(page) for ever, so it ends at page \(page). Return a cursor that moves on, and none after the last page."
    }
}

/// A breach of the paging contract that ``PagedRows`` reports once per kind, with the page it was
/// seen on.
protocol PageContractBreach: Error, Sendable {
    /// The page, counted from 0.
    var page: Int { get }
}
