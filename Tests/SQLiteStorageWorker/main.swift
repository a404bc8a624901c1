import AvenuesSQLite
import Foundation

// A child process for the SQLite tests. Every value it writes says which key and version it is and
// can be checked from its own bytes, so any process can tell a wrong value from a right one.
//
//   SQLiteStorageWorker mixed DB WORKER OPS SEED COUNT-LIMIT SIZE-LIMIT
//       random writes, reads and removals over 300 keys; every read is checked, and the limits
//       after every write; prints "ok OPS" or "wrong: …" (exit status 1)
//   SQLiteStorageWorker write-forever DB
//       writes versions of 200 keys until killed; prints "started" after the first 100
//   SQLiteStorageWorker verify DB
//       checks every value there; prints "ok N present" or "wrong: …"
//   SQLiteStorageWorker set-and-exit DB
//       `set`s 300 keys (batched commits) and calls exit(0) at once: a normal exit must keep them

func value(key: String, version: Int) -> Data {
    let letters = Array("abcdefghijklmnopqrstuvwxyz")
    return Data("\(key)|\(version)|\(String(repeating: letters[version % 26], count: version * 37 % 300))".utf8)
}

func isWellFormed(_ data: Data, key: String) -> Bool {
    let text = String(decoding: data, as: UTF8.self)
    let parts = text.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
    guard parts.count == 3, parts[0] == key, let version = Int(parts[1]) else { return false }
    return data == value(key: key, version: version)
}

func fail(_ message: String) -> Never {
    print("wrong: \(message)")
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else { fail("usage: SQLiteStorageWorker mixed|write-forever|verify|set-and-exit DB …") }
let file = URL(fileURLWithPath: arguments[2])

switch arguments[1] {
case "mixed":
    guard arguments.count == 8, let worker = Int(arguments[3]), let operations = Int(arguments[4]), var seed = UInt64(arguments[5]),
          let countLimit = Int(arguments[6]), let sizeLimit = Int(arguments[7])
    else { fail("usage: mixed DB WORKER OPS SEED COUNT-LIMIT SIZE-LIMIT") }
    let storage = SQLiteStorage<String>(file: file, sizeLimit: sizeLimit, countLimit: countLimit)
    func next() -> UInt64 {
        seed &+= 0x9E37_79B9_7F4A_7C15
        var z = seed
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    for operation in 0..<operations {
        let key = "k\(next() % 300)"
        switch next() % 10 {
        case 0..<4:
            do {
                try storage.write(value(key: key, version: worker * 1_000_000 + operation), for: key)
            } catch {
                guard error.reason == .busy else { fail("write \(key): \(error)") }
            }
            if let usage = storage.usage, usage.count > countLimit || usage.size > sizeLimit {
                fail("after a write: \(usage.count) entries, \(usage.size) bytes; limits \(countLimit), \(sizeLimit)")
            }
        case 4:
            storage.removeValue(for: key)
        default:
            if let data = storage.value(for: key), !isWellFormed(data, key: key) {
                fail("\(key) read \(String(decoding: data.prefix(80), as: UTF8.self))")
            }
        }
    }
    print("ok \(operations)")
case "write-forever":
    let storage = SQLiteStorage<String>(file: file)
    var version = 0
    while true {
        version += 1
        let key = "k\(version % 200)"
        try? storage.write(value(key: key, version: version), for: key)
        if version == 100 {
            FileHandle.standardOutput.write(Data("started\n".utf8))  // unbuffered: the test waits for it
        }
    }
case "set-and-exit":
    let storage = SQLiteStorage<String>(file: file)
    for index in 0..<300 { storage.set(value(key: "k\(index)", version: 1), for: "k\(index)") }
    exit(0)
case "verify":
    let storage = SQLiteStorage<String>(file: file)
    var present = 0
    for index in 0..<300 {
        let key = "k\(index)"
        guard let data = storage.value(for: key) else { continue }
        guard isWellFormed(data, key: key) else { fail("\(key) read \(String(decoding: data.prefix(80), as: UTF8.self))") }
        present += 1
    }
    print("ok \(present) present")
default:
    fail("unknown mode \(arguments[1])")
}
