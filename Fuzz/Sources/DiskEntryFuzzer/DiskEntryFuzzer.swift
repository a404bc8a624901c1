import Avenues
import Foundation
import FuzzDriver

// Feeds arbitrary bytes to DiskStorage as the file at an entry's name (and, for inputs starting with
// 0xFF, as its folder's lock file) and reads them back through the public API. Whatever the bytes,
// a read must return a miss, a typed error or the exact value of a sound entry — never crash, hang
// or trap — and the storage must keep working afterwards.

/// One folder per process, in memory when /dev/shm exists (the fuzzer writes a file per input).
let folder: URL = {
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory
    return base.appendingPathComponent("avenues-fuzz-\(getpid())", isDirectory: true)
}()
let storage = DiskStorage<String>(directory: folder, sizeLimit: 1 << 20)
let entryPath: String = {
    // The entry file of "k": write a value once and find the file it made.
    try? storage.write(Data("seed".utf8), for: "k")
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    return folder.appendingPathComponent(names.first { $0.hasSuffix(".entry") } ?? "missing.entry").path
}()
let lockPath = folder.appendingPathComponent(".avenues-lock").path

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Data(bytes: start, count: count)
    if bytes.first == 0xFF {
        // The lock file with the folder's totals: damaged totals are recounted, never trusted.
        _ = FileManager.default.createFile(atPath: lockPath, contents: bytes.dropFirst())
        try? storage.write(Data(count: Int(bytes.count % 4_096)), for: "other")
        let usage = storage.usage
        precondition(usage.size >= 0 && usage.size <= 1 << 20 && usage.count >= 0, "totals out of range: \(usage)")
        storage.removeValue(for: "other")
        return 0
    }
    _ = FileManager.default.createFile(atPath: entryPath, contents: bytes)
    if let entry = try? storage.entry(for: "k") {
        // Accepted: then the file must be exactly a sound entry of "k" carrying this payload.
        precondition(bytes.count >= 48 + 1 + entry.data.count, "accepted a file too short for its payload")
        precondition(bytes.suffix(entry.data.count) == entry.data, "served bytes that are not the file's payload")
    }
    // Still a working storage.
    try? storage.write(Data("v".utf8), for: "k")
    precondition(storage.value(for: "k") == Data("v".utf8), "the storage stopped working")
    return 0
}

@_cdecl("DiskEntryFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    // libFuzzer ends a run that found nothing with exit(): the folder goes with it (every CI run
    // left one in /dev/shm). A crash keeps it, beside the input that crashed.
    atexit { try? FileManager.default.removeItem(at: folder) }
    return runFuzzer(argc, argv) { start, length in fuzz(start, length) }
}
