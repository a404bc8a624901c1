import Foundation
import Testing
@testable import Avenues

/// The DocC articles' examples (Sources/Avenues/Avenues.docc), compiled and run:
/// `.ci/check_readme.py` compares each `<!-- compiled: NAME -->` block of an article with the region
/// marked `// DocC NAME: begin` … `end` here.
@Suite("Documentation examples", .serialized, .timeLimit(.minutes(5)))
struct DocumentationExampleTests {
    @Test func aPrefetchedList() async {
        let paths = (0..<1_000).map { "/data/file-\($0)" }

        // DocC a prefetched list: begin
        let avenue = Avenue<Int, String, Int>(storage: MemoryStorage(countLimit: 500), processor: ClosureProcessor { path in
            path.utf8.count                                  // stands for reading and summarizing the file
        })
        let prefetcher = RowPrefetcher(avenue: avenue, policy: .adaptive) { row in
            paths.indices.contains(row) ? paths[row] : nil   // the key a row shows, if any
        }
        let changes = avenue.subscribe()
        prefetcher.show(0..<40)                              // the first screen, then on every scroll
        for await event in changes where (0..<40).contains(event.index) {
            if (0..<40).allSatisfy({ avenue.item(at: $0) != nil }) { break }
        }
        // DocC a prefetched list: end

        #expect(avenue.item(at: 0) == "/data/file-0".utf8.count)
        prefetcher.stop()
    }

    @Test func hints() async {
        let paths = (0..<1_000).map { "/data/file-\($0)" }
        let avenue = Avenue<Int, String, Int>(storage: MemoryStorage(countLimit: 500), processor: ClosureProcessor { $0.utf8.count })
        let prefetcher = RowPrefetcher(avenue: avenue, policy: .adaptive) { row in
            paths.indices.contains(row) ? paths[row] : nil
        }
        let changes = avenue.subscribe()
        let (screenRows, nextMatch) = (40, 700)

        // DocC hints: begin
        prefetcher.show(0..<screenRows)
        prefetcher.hint([nextMatch - screenRows / 3, paths.count - screenRows])  // n, and G
        for await event in changes where event.index == nextMatch {
            if avenue.item(at: nextMatch) != nil { break }   // warmed before the user jumps there
        }
        // DocC hints: end

        #expect(prefetcher.window[nextMatch] != nil && prefetcher.window[999] != nil)
        prefetcher.stop()
    }

    @Test func memoryOverDisk() async throws {
        let temporary = TemporaryFolder("docc-caching")
        defer { withExtendedLifetime(temporary) {} }  // not deleted mid-test, after its last use
        let folder = temporary.url
        struct Summary: Codable, Sendable, Equatable { var lines: Int }
        let summarize = ClosureProcessor { (path: String) in Summary(lines: path.count) }

        // DocC memory over disk: begin
        let disk = DiskStorage<String>(directory: folder, sizeLimit: 64 << 20).codable(Summary.self)

        // Memory layered over disk: a disk hit is served by prepareItem itself (on its thread).
        let simple = Avenue<Int, String, Summary>(storage: MemoryStorage().layered(over: disk), processor: summarize)

        // The work cached in the disk: prepareItem touches memory only; the disk is read by a worker,
        // in the same run as the work (one run per key covers both).
        let responsive = Avenue<Int, String, Summary>(storage: MemoryStorage(), processor: summarize.cached(in: disk))
        // DocC memory over disk: end

        let changes = responsive.subscribe()
        responsive.prepareItem(for: "a/b", at: 0)
        for await _ in changes.prefix(1) {}
        #expect(disk.value(for: "a/b") == Summary(lines: 3))
        simple.prepareItem(for: "a/b", at: 0)
        #expect(simple.item(at: 0) == Summary(lines: 3))   // from the disk layer, synchronously
    }

    @Test func theCachedProcessorDocExampleWorksAsWritten() async {
        let temporary = TemporaryFolder("docc-cached")
        defer { withExtendedLifetime(temporary) {} }  // not deleted mid-test, after its last use
        let folder = temporary.url
        struct Summary: Codable, Sendable, Equatable { var lines: Int }
        let summarize = ClosureProcessor { (path: String) in Summary(lines: path.count) }
        // As in `Processor.cached(in:)`'s doc comment (CachedProcessor.swift):
        let disk = DiskStorage<String>(directory: folder).codable(Summary.self)
        let avenue = Avenue<Int, String, Summary>(storage: MemoryStorage(), processor: summarize.cached(in: disk))
        let changes = avenue.subscribe()
        avenue.prepareItem(for: "a/b/c", at: 0)
        for await _ in changes.prefix(1) {}
        #expect(avenue.item(at: 0) == Summary(lines: 5))
        #expect(disk.value(for: "a/b/c") == Summary(lines: 5))   // the work's result was written to the disk
    }

    @Test func multiplexers() async throws {
        struct Profile: Codable, Sendable, Equatable { var name: String }
        let fetches = Locked(0)
        let fetchProfile: @Sendable (String) async throws -> Profile = { id in
            fetches.withLock { $0 += 1 }
            return Profile(name: "user \(id)")
        }

        // DocC multiplexers: begin
        let profiles = MultiplexerMap(timeToLive: .seconds(600), onFetch: fetchProfile)
        async let first = profiles.value(for: "42")      // two callers, one fetch
        async let second = profiles.value(for: "42")
        let (a, b) = try await (first, second)
        let again = try await profiles.refresh(for: "42").value(for: "42")   // soft: fetches again
        // DocC multiplexers: end

        #expect(a == b && a == again)
        #expect(fetches.withLock { $0 } <= 3)
    }

    @Test func failuresAndStaleness() async throws {
        let attempts = Locked(0)
        // DocC failures: begin
        let avenue = Avenue<Int, String, String>(
            storage: MemoryStorage(),
            processor: ClosureProcessor { key in
                if attempts.withLock({ $0 += 1; return $0 }) == 1 { throw URLError(.notConnectedToInternet) }
                return key.uppercased()
            },
            retryPolicy: RetryPolicy(attempts: 5, base: .milliseconds(1), cap: .milliseconds(10))
        )
        let changes = avenue.subscribe()
        avenue.prepareItem(for: "row zero", at: 0)
        for await event in changes {
            switch avenue.state(at: event.index) {
            case .failed(let error, let retryAt?):
                // Preparing the row again (every redraw does) retries once `retryAt` is past;
                // a "retry" key press can skip the wait.
                print("row \(event.index): \(error); next try at \(retryAt)")
                avenue.retry(at: event.index)
            case .stale(let revalidating, _):
                print("an old value is shown", revalidating ? "while a new one loads" : "")
            default:
                break
            }
            if avenue.item(at: 0) != nil { break }
        }
        // DocC failures: end

        #expect(avenue.item(at: 0) == "ROW ZERO")
    }
}
