import Avenues
import Foundation

// Downloads every URL listed in a file (one per line) through a fresh AsyncMedia, `--concurrency`
// at a time, and prints the wall time of each run: the Avenues side of `keepalive-bench.py`, which
// runs `curl --parallel` on the same URLs beside it.
//
// Usage: media-bench URL-LIST [--ca-file PEM] [--concurrency 6] [--runs 3]

struct Options {
    var list = ""
    var caFile: String?
    var concurrency = 6
    var runs = 3

    init(_ arguments: [String]) {
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--ca-file": caFile = rest.popFirst()
            case "--concurrency": concurrency = rest.popFirst().flatMap(Int.init) ?? concurrency
            case "--runs": runs = rest.popFirst().flatMap(Int.init) ?? runs
            default: list = argument
            }
        }
    }
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
guard let text = try? String(contentsOfFile: options.list, encoding: .utf8) else {
    FileHandle.standardError.write(Data("media-bench: cannot read the URL list \(options.list); usage: media-bench URL-LIST [--ca-file PEM] [--concurrency N] [--runs N]\n".utf8))
    exit(1)
}
let urls = text.split(separator: "\n").compactMap { URL(string: String($0)) }
let transport: (any DownloadTransport)?
#if os(Linux)
do {
    transport = try CurlTransport(caFile: options.caFile)
} catch {
    FileHandle.standardError.write(Data("media-bench: \(error)\n".utf8))
    exit(1)
}
#else
transport = nil
#endif

for run in 1 ... options.runs {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("media-bench-\(UUID().uuidString)")
    let media = AsyncMedia(directory: folder, maxConcurrentDownloads: options.concurrency, transport: transport)
    let clock = ContinuousClock()
    let start = clock.now
    let failures = await withTaskGroup(of: Int.self) { group in
        for url in urls {
            group.addTask { (try? await media.file(for: url)) == nil ? 1 : 0 }
        }
        var failed = 0
        for await failure in group { failed += failure }
        return failed
    }
    let elapsed = clock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    print("run \(run): \(urls.count) files in \(String(format: "%.3f", seconds)) s, \(failures) failed")
    try? FileManager.default.removeItem(at: folder)
}
