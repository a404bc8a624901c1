// Inlinable because `PagedRows.item(at:)` is (see benchmark "PagedRows item(at:) on its resident rows").
/// The pages a ``PagedRows`` holds in memory, as the ``Storage`` of its page avenue.
///
/// One page per page number, with the generation it was loaded in: a page of an older generation
/// (before a refresh), or one from the page cache (a previous run), is returned by ``lookup(_:)`` as
/// stale, so its rows show while the current one loads.
///
/// The memory bound is applied on every store, under the store's lock: beyond `limit` rows, the
/// pages farthest from the window's centre go first, never a page the window protects (set with
/// ``protect(_:center:)`` each time the window changes). So the rows held never exceed the larger
/// of the limit and the rows the window protects, at any moment.
@usableFromInline
final class PageStore<Cursor: Hashable & Sendable, Item: Sendable>: Storage {
    @usableFromInline typealias Key = PageKey<Cursor>
    @usableFromInline typealias Value = Page<Cursor, Item>

    @usableFromInline
    struct Resident {
        @usableFromInline var generation: UInt64
        @usableFromInline var page: Page<Cursor, Item>
    }

    // Visible to inlinable code so that `PagedRows.item(at:)` is specialized in the caller's
    // module (unspecialized, it costs many mutex-guarded dictionary reads; see the same benchmark).
    @usableFromInline let resident = Locked([Int: Resident]())
    @usableFromInline let cache: (any Storage<Int, Page<Cursor, Item>>)?
    private let stored = LateBound<(Key, Value), Void>()
    /// The most rows held beyond the protected pages.
    let limit: Int
    /// Rows per page: what a page number means, in memory and in the cache.
    @usableFromInline let pageSize: Int
    private let protection = Locked(Protection())

    /// What the window protects: its pages, and while a new window is being applied, the ranges
    /// its pages will come from (a page of it may arrive before the window knows its keys).
    struct Protection: Sendable {
        var pages: Set<Int> = []
        var arriving: [Range<Int>] = []
        var center = 0

        func contains(_ number: Int) -> Bool {
            pages.contains(number) || arriving.contains { $0.contains(number) }
        }
    }

    init(cache: (any Storage<Int, Page<Cursor, Item>>)?, limit: Int, pageSize: Int) {
        self.cache = cache
        self.limit = limit
        self.pageSize = pageSize
    }

    /// Called with every page stored (after the store's lock is released).
    func onStore(_ body: @escaping @Sendable (Key, Value) -> Void) {
        stored.set(body)
    }

    // MARK: Storage

    /// The page of `key`'s generation, if held.
    @usableFromInline func value(for key: Key) -> Value? {
        resident.withLock { resident in
            resident[key.number].flatMap { $0.generation == key.generation ? $0.page : nil }
        }
    }

    /// The page of `key`'s generation (fresh), else an older one or the cached one (stale).
    @usableFromInline func lookup(_ key: Key) -> StoredValue<Value>? {
        if let held = resident.withLock({ $0[key.number] }) {
            return StoredValue(held.page, isStale: held.generation != key.generation)
        }
        return cached(key.number).map { StoredValue($0, isStale: true) }
    }

    /// Holds `value` unless a newer generation of the page is held (a late load of an old one), then
    /// applies the bound.
    @usableFromInline func set(_ value: Value, for key: Key) {
        let protection = protection.withLock { $0 }
        let (kept, dropped) = resident.withLock { resident -> (Bool, [Resident]) in
            if let held = resident[key.number], held.generation > key.generation { return (false, []) }
            let replaced = resident.updateValue(Resident(generation: key.generation, page: value), forKey: key.number)
            var dropped = Self.trim(&resident, limit: limit, protected: protection)
            if let replaced { dropped.append(replaced) }
            return (true, dropped)
        }
        _ = dropped  // released after the lock
        guard kept else { return }
        cache?.set(value, for: key.number)
        stored((key, value))
    }

    @usableFromInline func removeValue(for key: Key) {
        resident.withLock { resident in
            if resident[key.number]?.generation == key.generation { resident[key.number] = nil }
        }
    }

    @usableFromInline func removeAll() {
        resident.withLock { $0 = [:] }
    }

    // MARK: For PagedRows

    /// The page held for `number` whatever its generation, else the cached one.
    @inlinable
    func anyPage(_ number: Int) -> Value? {
        if let held = resident.withLock({ $0[number]?.page }) { return held }
        return cached(number)
    }

    /// Page `number` from the cache, if this list's page size made it. Pages are kept by number, and
    /// a run with another page size numbered them otherwise (its page 2 of 50 rows is rows 100–149,
    /// not this run's 200–299). Every page but the last is full, so one that is not of this size
    /// is another's. A last page cannot tell (20 rows are the last page of 50 or of 100), so only
    /// the first page is taken when it is the last; a later last page loads before it shows.
    @usableFromInline
    func cached(_ number: Int) -> Value? {
        guard let cache, let page = cache.value(for: number) else { return nil }
        if page.cursorAfter != nil { return page.items.count == pageSize ? page : nil }
        return number == 0 && page.items.count <= pageSize ? page : nil
    }

    var residentSize: (pages: Int, rows: Int) {
        resident.withLock { resident in (resident.count, resident.values.reduce(0) { $0 + $1.page.items.count }) }
    }

    /// A new window's pages will come from `ranges`: until the next ``protect(_:center:)``, no page
    /// in them is dropped (they are protected before their loads start, so one that arrives at once
    /// is kept), beside what the current window protects.
    func protect(arriving ranges: [Range<Int>]) {
        protection.withLock { $0.arriving = ranges }
    }

    /// The window now protects `pages` (never dropped) and centres on page `center`; applies the
    /// bound at once.
    func protect(_ pages: Set<Int>, center: Int) {
        let protection = Protection(pages: pages, center: center)
        self.protection.withLock { $0 = protection }
        let dropped = resident.withLock { Self.trim(&$0, limit: limit, protected: protection) }
        _ = dropped  // released after the lock
    }

    /// Drops the pages farthest from the protection's centre until at most `limit` rows are held,
    /// never one it protects; returns them, to be released after the lock.
    private static func trim(_ resident: inout [Int: Resident], limit: Int, protected: Protection) -> [Resident] {
        var rows = resident.values.reduce(0) { Saturating.add($0, $1.page.items.count) }
        guard rows > limit else { return [] }
        var dropped: [Resident] = []
        let center = protected.center
        let candidates = resident.keys.filter { !protected.contains($0) }.sorted { ($0 - center).magnitude > ($1 - center).magnitude }
        for number in candidates {
            guard rows > limit, let page = resident.removeValue(forKey: number) else { break }
            rows -= page.page.items.count
            dropped.append(page)
        }
        return dropped
    }
}
