/// How much a cache folder holds: a ``DiskStorage``'s entries or an ``AsyncMedia``'s files.
///
/// Its fields have the names of the tuple it replaces, so `storage.usage.size` reads as before.
public struct DiskUsage: Sendable, Hashable, CustomStringConvertible {
    /// Entries (or files) in the folder.
    public var count: Int
    /// Their total size in bytes.
    public var size: Int

    /// A usage of `count` entries totalling `size` bytes.
    public init(count: Int, size: Int) {
        (self.count, self.size) = (count, size)
    }

    /// `"12 entries, 34567 bytes"`.
    public var description: String { "\(count) entries, \(size) bytes" }
}
