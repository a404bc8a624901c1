// Inlinable because `Avenue.item(at:)` is (see there).
/// The avenue's row → entry table. Rows of a list are small integers, so `Int` rows below
/// ``pagedLimit`` live in pages of 512 slots found by shifting, not hashing — `item(at:)` then hashes
/// once (the key, in storage) instead of twice. Other rows and index types use a dictionary. A page
/// is freed when its last row goes, so memory follows the rows assigned, not the largest index.
@usableFromInline
struct RowTable<Index: Hashable, Row> {
    @usableFromInline static var pageShift: Int { 9 }
    @usableFromInline static var pageSize: Int { 1 << pageShift }
    /// Rows at or above this go to the dictionary (about 4 million: 8,192 page slots at most).
    @usableFromInline static var pagedLimit: Int { 1 << 22 }

    @usableFromInline var pages: [[Row?]] = []
    @usableFromInline var pageCounts: [Int] = []
    @usableFromInline var others: [Index: Row] = [:]
    @usableFromInline private(set) var count = 0

    @inlinable init() {}

    /// The paged position of `index`, if it has one. Folds to a constant test when specialized.
    @inlinable
    static func position(of index: Index) -> (page: Int, slot: Int)? {
        guard let row = index as? Int, row >= 0, row < pagedLimit else { return nil }
        return (row >> pageShift, row & (pageSize - 1))
    }

    @inlinable
    subscript(index: Index) -> Row? {
        get {
            guard let (page, slot) = Self.position(of: index) else { return others[index] }
            guard page < pages.count, !pages[page].isEmpty else { return nil }
            return pages[page][slot]
        }
        set {
            guard let (page, slot) = Self.position(of: index) else {
                let old = if let newValue { others.updateValue(newValue, forKey: index) } else { others.removeValue(forKey: index) }
                count += (newValue == nil ? 0 : 1) - (old == nil ? 0 : 1)
                return
            }
            if page >= pages.count {
                guard newValue != nil else { return }
                pages.append(contentsOf: repeatElement([], count: page + 1 - pages.count))
                pageCounts.append(contentsOf: repeatElement(0, count: page + 1 - pageCounts.count))
            }
            if pages[page].isEmpty {
                guard newValue != nil else { return }
                pages[page] = Array(repeating: nil, count: Self.pageSize)
            }
            let change = (newValue == nil ? 0 : 1) - (pages[page][slot] == nil ? 0 : 1)
            pages[page][slot] = newValue
            pageCounts[page] += change
            count += change
            if pageCounts[page] == 0 { pages[page] = [] }
        }
    }

    @inlinable
    mutating func removeAll() {
        self = RowTable()
    }

    /// The number of pages holding rows (for tests).
    @inlinable
    var pagesInUse: Int { pageCounts.lazy.filter { $0 > 0 }.count }
}
