/// How urgently a value is wanted.
///
/// ``AutoProcessor`` runs queued `.visible` work before queued `.prefetch` work, and `.prefetch` work
/// before `.background` work. A key's priority is the highest among everyone waiting for it, so a
/// prefetched row that scrolls into view moves ahead. Work below `.visible` shares the workers that
/// admission control leaves to prefetching (``AutoProcessor``'s `reservedForVisible`).
public enum LoadPriority: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// Wanted perhaps, later: warmed only when nothing more urgent waits, e.g. the rows at a search
    /// result the user has not jumped to yet (``RowPrefetcher/hint(_:)``).
    case background = 0
    /// Wanted soon, e.g. a row just outside the screen in the scroll direction.
    case prefetch = 1
    /// Wanted now, e.g. a row on screen.
    case visible = 2

    /// `.background` < `.prefetch` < `.visible`.
    public static func < (lhs: LoadPriority, rhs: LoadPriority) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// `"visible"`, `"prefetch"` or `"background"`.
    public var description: String {
        switch self {
        case .background: "background"
        case .prefetch: "prefetch"
        case .visible: "visible"
        }
    }
}
