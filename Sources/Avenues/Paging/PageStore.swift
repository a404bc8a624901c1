// Inlinable because `PagedRows.item(at:)` is (benchmark "PagedRows item(at:) on its resident rows": 288 -> 35 ns).
/// The pages a ``PagedRows`` holds in memory, as the ``Storage`` of its page avenue.
///
/// One page per page number, with the generation it was loaded in: a page of an older generation
/// (before a refresh), or one from the page cache (a previous run), is returned by ``lookup(_:)`` as
/// stale, so its rows show while the current one loads. ``drop(keepingRows:protected:center:)``
/// applies the memory bound.
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
    // module (unspecialized, it cost 15× a mutex-guarded dictionary read).
    @usableFromInline let resident = Locked([Int: Resident]())
    @usableFromInline let cache: (any Storage<Int, Page<Cursor, Item>>)?
    private let stored = LateBound<(Key, Value), Void>()

    init(cache: (any Storage<Int, Page<Cursor, Item>>)?) {
        self.cache = cache
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
        return cache?.value(for: key.number).map { StoredValue($0, isStale: true) }
    }

    /// Holds `value` unless a newer generation of the page is held (a late load of an old one).
    @usableFromInline func set(_ value: Value, for key: Key) {
        let kept = resident.withLock { resident -> Bool in
            if let held = resident[key.number], held.generation > key.generation { return false }
            resident[key.number] = Resident(generation: key.generation, page: value)
            return true
        }
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
        return cache?.value(for: number)
    }

    var residentSize: (pages: Int, rows: Int) {
        resident.withLock { resident in (resident.count, resident.values.reduce(0) { $0 + $1.page.items.count }) }
    }

    /// Drops the pages farthest from `center` until at most `keepingRows` rows are held, never one
    /// in `protected`. Dropped values are released after the lock.
    func drop(keepingRows limit: Int, protected: Set<Int>, center: Int) {
        let dropped = resident.withLock { resident -> [Resident] in
            var rows = resident.values.reduce(0) { $0 + $1.page.items.count }
            guard rows > limit else { return [] }
            var dropped: [Resident] = []
            let candidates = resident.keys.filter { !protected.contains($0) }.sorted { abs($0 - center) > abs($1 - center) }
            for number in candidates {
                guard rows > limit, let page = resident.removeValue(forKey: number) else { break }
                rows -= page.page.items.count
                dropped.append(page)
            }
            return dropped
        }
        _ = dropped
    }
}
