import Avenues
import Foundation
import Synchronization

/// A commit as a row of the log.
public struct Commit: Sendable, Hashable, Codable {
    /// The full hash: the commit's identity (a diff stat is cached by it).
    public var hash: String
    /// The abbreviated hash, as `git log` prints it (`%h`).
    public var shortHash: String
    /// The author date, `YYYY-MM-DD`.
    public var date: String
    /// The author's name.
    public var author: String
    /// The subject line.
    public var subject: String

    /// A commit.
    public init(hash: String, shortHash: String, date: String, author: String, subject: String) {
        (self.hash, self.shortHash, self.date, self.author, self.subject) = (hash, shortHash, date, author, subject)
    }

    /// The line `history` prints when its output is not a terminal: `git log`'s
    /// `--format=%h%x09%ad%x09%an%x09%s --date=short`.
    public var line: String { [shortHash, date, author, subject].joined(separator: "\t") }
}

/// `git log` of a repository as an offset page source. Pages read in order (scrolling down,
/// streaming) come from one `git log` process read a page at a time — its pipe keeps it at most a
/// few pages ahead — so reading the whole log costs what `git log` costs; any other page is
/// `git log --skip=offset --max-count=size`, so a jump to the root commit asks git for one page.
/// The number of commits (`git rev-list --count HEAD`) is counted in parallel with the first page
/// and given with every later one, so the count becomes exact without delaying the first screen.
public final class GitLog: OffsetPageSource {
    public typealias Cursor = Int
    public typealias Item = Commit

    /// The repository (any folder inside it).
    public let repository: String
    private let total: Task<Int?, Never>
    /// The `git log` read in order, and how far.
    private let stream = Mutex<LogStream?>(nil)
    /// One NUL-terminated record per commit (`-z`), fields split by 0x1F; the subject comes last, so
    /// whatever bytes it holds stay in it.
    static let format = ["-z", "--date=short", "--format=%H%x1f%h%x1f%ad%x1f%an%x1f%s"]

    /// The log of the repository at `repository`.
    public init(repository: String) {
        self.repository = repository
        total = Task {
            guard let data = try? await Git.run(["rev-list", "--count", "HEAD"], in: repository) else { return nil }
            return Int(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    deinit {
        total.cancel()
        stream.withLock { $0?.close() }
    }

    /// Checks that git runs and `repository` is a repository; throws ``Git/Failure`` otherwise.
    public func check() async throws {
        _ = try await Git.run(["rev-parse", "--git-dir"], in: repository)
    }

    /// `size` commits from `offset`, newest first.
    public func page(at offset: Int, size: Int) async throws -> Page<Int, Commit> {
        let commits: [Commit]
        if let streamed = try await readInOrder(at: offset, count: size) {
            commits = streamed
        } else {
            do {
                commits = Self.parse(try await Git.run(["log", "--skip=\(offset)", "--max-count=\(size)"] + Self.format, in: repository))
            } catch Git.Failure.failed(_, _, let message) where message.contains("does not have any commits") {
                return Page(items: [], cursorAfter: nil, itemsAfter: 0)  // a new, empty repository
            }
        }
        // The first page does not wait for the count; later ones do (it is long done by then).
        let count = offset == 0 ? nil : await total.value
        let end = offset + commits.count
        let more = commits.count == size && (count.map { end < $0 } ?? true)
        return Page(items: commits, cursorAfter: more ? end : nil, itemsAfter: count.map { max(0, $0 - end) })
    }

    /// The next `count` commits of the in-order stream if it stands at `offset` (starting it for
    /// offset 0); `nil` when another page must be asked with `--skip`.
    private func readInOrder(at offset: Int, count: Int) async throws -> [Commit]? {
        let taken = stream.withLock { stream -> LogStream? in
            if stream == nil, offset == 0, let executable = Git.executable {
                stream = LogStream(executable: executable, repository: repository, arguments: ["log"] + Self.format)
            }
            guard let current = stream, current.position == offset else { return nil }
            stream = nil  // taken by this request; others use --skip meanwhile
            return current
        }
        guard let taken else { return nil }
        let commits = await taken.read(count)
        guard commits.count == count || (taken.ended && !taken.failed) else {
            taken.close()  // cancelled or broken: the next in-order page starts a new stream
            return nil
        }
        stream.withLock { if $0 == nil { $0 = taken } else { taken.close() } }
        return commits
    }

    /// Parses `git log -z --format=%H%x1f%h%x1f%ad%x1f%an%x1f%s` output; a record that does not
    /// have the five fields is skipped.
    public static func parse(_ data: Data) -> [Commit] {
        data.split(separator: 0).compactMap { record in
            let fields = record.split(separator: 0x1F, maxSplits: 4, omittingEmptySubsequences: false).map {
                String(decoding: $0, as: UTF8.self)
            }
            guard fields.count == 5 else { return nil }
            return Commit(hash: fields[0], shortHash: fields[1], date: fields[2], author: fields[3], subject: fields[4])
        }
    }
}

/// One `git log` process read a number of records at a time. Its pipe fills and git waits, so it
/// never runs far ahead of the reader.
final class LogStream: @unchecked Sendable {
    // Safe: a stream is used by one request at a time — `GitLog` takes it out of its mutex while
    // reading and puts it back after — so its fields are never touched by two threads at once.
    private let process: Process
    private let handle: FileHandle
    private var buffer = Data()
    private(set) var position = 0
    private(set) var ended = false
    /// git exited with an error: the page is asked again with `--skip`, which reports it.
    private(set) var failed = false

    init?(executable: URL, repository: String, arguments: [String]) {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["-C", repository] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["LC_ALL": "C", "GIT_PAGER": "cat"]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        self.process = process
        handle = output.fileHandleForReading
    }

    /// The next `count` commits (fewer at the end of the log), read on a thread of its own.
    func read(_ count: Int) async -> [Commit] {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                var commits: [Commit] = []
                while commits.count < count {
                    if let end = buffer.firstIndex(of: 0) {
                        commits += GitLog.parse(buffer[buffer.startIndex ... end])
                        buffer.removeSubrange(buffer.startIndex ... end)
                        continue
                    }
                    let chunk = handle.availableData
                    if chunk.isEmpty {
                        ended = true
                        process.waitUntilExit()
                        failed = process.terminationStatus != 0
                        break
                    }
                    buffer.append(chunk)
                }
                position += commits.count
                continuation.resume(returning: commits)
            }
        }
    }

    func close() {
        if process.isRunning { process.terminate() }
        try? handle.close()
    }
}

/// What a commit changed: `git show --numstat`, summed.
public struct DiffStat: Sendable, Hashable, Codable {
    /// Files changed.
    public var files: Int
    /// Lines added (binary files count none).
    public var added: Int
    /// Lines removed.
    public var removed: Int

    /// A stat.
    public init(files: Int, added: Int, removed: Int) {
        (self.files, self.added, self.removed) = (files, added, removed)
    }

    /// `3 files +120 −4`.
    public var description: String { "\(files) file\(files == 1 ? "" : "s") +\(added) −\(removed)" }

    /// Sums `git show --numstat --format=` output (`added<TAB>removed<TAB>path`, `-` for binary).
    public static func parse(_ data: Data) -> DiffStat {
        var stat = DiffStat(files: 0, added: 0, removed: 0)
        for line in data.split(separator: 0x0A) {
            let fields = line.split(separator: 0x09, maxSplits: 2)
            guard fields.count == 3 else { continue }
            // Saturating: the numbers come from another program.
            stat.files = stat.files.addingReportingOverflow(1).overflow ? .max : stat.files + 1
            stat.added = Self.sum(stat.added, fields[0])
            stat.removed = Self.sum(stat.removed, fields[1])
        }
        return stat
    }

    private static func sum(_ total: Int, _ field: Data.SubSequence) -> Int {
        let value = Int(String(decoding: field, as: UTF8.self)) ?? 0  // "-" for a binary file
        let (sum, overflow) = total.addingReportingOverflow(max(0, value))
        return overflow ? .max : sum
    }
}

/// A commit's diff stat, computed by `git show --numstat` (terminated if the row scrolls away).
public struct DiffStats: Processor {
    /// The repository.
    public let repository: String

    /// A processor for the repository at `repository`.
    public init(repository: String) {
        self.repository = repository
    }

    /// The stat of the commit `hash`.
    public func process(_ hash: String) async throws -> DiffStat {
        DiffStat.parse(try await Git.run(["show", "--numstat", "--format=", "--no-renames", hash], in: repository))
    }
}
