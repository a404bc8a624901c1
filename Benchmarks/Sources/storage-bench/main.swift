import Avenues
import AvenuesSQLite
import Foundation

// The Swift side of `storage-bench.py`: COUNT values of SIZE bytes written then read back, one call
// each, through DiskStorage or SQLiteStorage; or a large database opened and one value read; or a
// sweep to a count limit.
//
// Usage: storage-bench disk|sqlite PATH COUNT [SIZE]   -> "write S s, read S s"
//        storage-bench open PATH KEY                   -> "open+read S s"
//        storage-bench sweep PATH LIMIT                -> "sweep S s, N evicted"

let clock = ContinuousClock()
func seconds(_ duration: Duration) -> String {
    String(format: "%.3f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
}
func value(_ index: Int, size: Int) -> Data {
    var bytes = [UInt8](repeating: 0, count: size)
    var state = UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9_7F4A_7C15 | 1
    for position in bytes.indices {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        bytes[position] = UInt8(truncatingIfNeeded: state)
    }
    return Data(bytes)
}

let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
    FileHandle.standardError.write(Data("usage: storage-bench disk|sqlite PATH COUNT [SIZE] | open PATH KEY | sweep PATH LIMIT\n".utf8))
    exit(1)
}
let path = URL(fileURLWithPath: arguments[2])
switch arguments[1] {
case "disk", "sqlite":
    guard let count = Int(arguments[3]) else { exit(1) }
    let size = arguments.count > 4 ? Int(arguments[4]) ?? 100 : 100
    // Through the Storage protocol, as an avenue writes: `set`, then everything on disk (SQLite's
    // last batch committed) before the clock stops.
    let set: (Data, String) -> Void
    let read: (String) -> Data?
    let settle: () throws -> Void
    if arguments[1] == "disk" {
        let storage = DiskStorage<String>(directory: path)
        set = { storage.set($0, for: $1) }
        read = { storage.value(for: $0) }
        settle = {}
    } else {
        let storage = SQLiteStorage<String>(file: path)
        set = { storage.set($0, for: $1) }
        read = { storage.value(for: $0) }
        settle = { try storage.flush() }
    }
    let values = (0..<min(count, 1_000)).map { value($0, size: size) }
    let start = clock.now
    for index in 0..<count { set(values[index % values.count], "key-\(index)") }
    try settle()
    let written = clock.now
    var missing = 0
    for index in 0..<count where read("key-\(index)") == nil { missing += 1 }
    let finished = clock.now
    print("write \(seconds(written - start)) s, read \(seconds(finished - written)) s, \(missing) missing")
case "open":
    let start = clock.now
    let storage = SQLiteStorage<String>(file: path)
    let found = storage.value(for: arguments[3]) != nil
    print("open+read \(seconds(clock.now - start)) s, found \(found)")
case "sweep":
    guard let limit = Int(arguments[3]) else { exit(1) }
    let storage = SQLiteStorage<String>(file: path, countLimit: limit)
    let before = storage.usage?.count ?? 0
    let start = clock.now
    try storage.write(Data("x".utf8), for: "sweep-trigger")
    let elapsed = clock.now - start
    print("sweep \(seconds(elapsed)) s, \(before + 1 - (storage.usage?.count ?? 0)) evicted")
default:
    exit(1)
}
