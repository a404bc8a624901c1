import Foundation

/// Every live ``Multiplexer`` and ``MultiplexerMap`` that has a `cacheKey`, for operations on all of
/// them at once: save before the program exits, clear when the user signs out, free memory.
///
/// A multiplexer registers itself before its `init` returns, and the repository holds it weakly, so
/// it never keeps one alive. **Duplicate cache keys** do not crash: both instances are registered and
/// share one disk copy (saving either writes it; clearing either removes it). ``duplicateCacheKeys``
/// lists such keys, so a test or a debug build can catch the mistake.
public enum MuxRepository {
    private struct Weak {
        weak var member: (any MuxRepositoryMember)?
    }

    /// The members by identity: registering and unregistering are O(1). In an array searched (and
    /// swept of released members) on every call, 20,000 multiplexers with cache keys took 48 s to
    /// make and 60 s to unregister.
    private struct Members {
        var byIdentity: [ObjectIdentifier: Weak] = [:]
        /// How many were left by the last sweep of released members: the next comes once the
        /// table has doubled, so sweeps cost O(1) a registration.
        var sweptAt = 0

        mutating func sweep() {
            byIdentity = byIdentity.filter { $0.value.member != nil }
            sweptAt = byIdentity.count
        }
    }

    private static let members = Locked(Members())
    private static let chosenDirectory = Locked<URL?>(nil)

    /// The folder for the disk copies of multiplexers created without a `directory`: by default
    /// `avenues-mux` in the platform's cache folder (`$XDG_CACHE_HOME` or `~/.cache` on Linux), or
    /// `nil` when there is none. Set it before creating multiplexers to keep their copies elsewhere
    /// (tests use a temporary folder); `nil` goes back to the default.
    public static var defaultDirectory: URL? {
        get {
            chosenDirectory.withLock { $0 }
                ?? (try? DiskStorage<String>.cacheFolder())?.appendingPathComponent("avenues-mux", isDirectory: true)
        }
        set { chosenDirectory.withLock { $0 = newValue } }
    }

    /// Writes every registered multiplexer's memory copies to disk.
    ///
    /// - Returns: the failures, if any.
    @discardableResult
    public static func saveAll() -> [DiskStorageError] {
        live().flatMap { $0.saveToDisk() }
    }

    /// Removes every registered multiplexer's memory and disk copies (cancelling fetches in flight),
    /// and every other multiplexer's disk copy in the same folders — including those of multiplexers
    /// not created yet in this run — so nothing of the signed-out user is left.
    public static func clearAll() {
        let members = live()
        for member in members { member.clearEverything() }
        let roots = Set(members.compactMap { $0.diskFolder?.deletingLastPathComponent().standardizedFileURL })
        for root in roots {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
            for name in names where isMultiplexerFolder(name) {
                try? FileManager.default.removeItem(at: root.appendingPathComponent(name))
            }
        }
    }

    /// Drops every registered multiplexer's memory copies (on memory pressure); disk copies stay.
    public static func clearMemory() {
        for member in live() { member.clearMemory() }
    }

    /// The cache keys of the registered multiplexers that are alive, sorted (repeated for duplicates).
    public static var registeredCacheKeys: [String] {
        live().compactMap(\.cacheKey).sorted()
    }

    /// Cache keys used by more than one live multiplexer.
    public static var duplicateCacheKeys: Set<String> {
        var seen = Set<String>(), duplicates = Set<String>()
        for key in registeredCacheKeys where !seen.insert(key).inserted { duplicates.insert(key) }
        return duplicates
    }

    // MARK: Internals

    /// Registers `member` unless it already is (registration by `cacheKey` and an explicit
    /// `register()` may both happen).
    static func register(_ member: some MuxRepositoryMember) {
        let identity = ObjectIdentifier(member)
        members.withLock { members in
            // An entry of a released member may hold the identity a new one was given.
            guard members.byIdentity[identity]?.member !== member else { return }
            members.byIdentity[identity] = Weak(member: member)
            if members.byIdentity.count > 2 * max(members.sweptAt, 64) { members.sweep() }
        }
    }

    static func unregister(_ member: some MuxRepositoryMember) {
        let identity = ObjectIdentifier(member)
        _ = members.withLock { $0.byIdentity.removeValue(forKey: identity) }
    }

    private static func live() -> [any MuxRepositoryMember] {
        members.withLock { members in
            members.sweep()
            return members.byIdentity.values.compactMap(\.member)
        }
    }

    /// The disk storage of the multiplexer named `cacheKey`: a folder of its own, named by a stable
    /// hash, so any key is safe as a folder name.
    static func storage<Key: Sendable>(
        cacheKey: String, directory: URL?, keyString: @escaping @Sendable (Key) -> String
    ) -> DiskStorage<Key>? {
        guard let root = directory ?? defaultDirectory else { return nil }
        let folder = "mux-" + StableHash.hex(StableHash.fnv1a64(Array(cacheKey.utf8)))
        return DiskStorage(directory: root.appendingPathComponent(folder, isDirectory: true), keyString: keyString)
    }

    private static func isMultiplexerFolder(_ name: String) -> Bool {
        // ASCII only: `Character.isHexDigit` also accepts full-width digits, which we never write.
        name.utf8.count == 20 && name.hasPrefix("mux-") && name.utf8.dropFirst(4).allSatisfy(CacheFolder.isLowerHex)
    }
}

/// What ``MuxRepository`` needs of a multiplexer.
protocol MuxRepositoryMember: AnyObject, Sendable {
    var cacheKey: String? { get }
    var diskFolder: URL? { get }
    func saveToDisk() -> [DiskStorageError]
    func clearEverything()
    func clearMemory()
}
