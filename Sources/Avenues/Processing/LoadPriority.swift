/// How urgently a value is wanted.
///
/// ``AutoProcessor`` runs queued `.visible` work before queued `.prefetch` work. A key's priority is
/// the highest among everyone waiting for it, so a prefetched row that scrolls into view moves ahead.
public enum LoadPriority: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// Wanted soon, e.g. a row just outside the screen in the scroll direction.
    case prefetch = 0
    /// Wanted now, e.g. a row on screen.
    case visible = 1

    /// `.prefetch` < `.visible`.
    public static func < (lhs: LoadPriority, rhs: LoadPriority) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// `"visible"` or `"prefetch"`.
    public var description: String {
        switch self {
        case .prefetch: "prefetch"
        case .visible: "visible"
        }
    }
}
