import Avenues
import CSystemIO
import Foundation
import Synchronization

/// A commit as a row of the log.
public struct Commit: Sendable, Hashable {
    /// The full hash: the commit's identity (a diff stat is cached by it).
    public var hash: String
    /// The abbreviated hash, as `git log` prints it (`%h`).
    public var shortHash: String
    /// The author date, `YYYY-MM-DD`.
    public var date: String
    /// The author's name, exactly as git has it (any bytes).
    public var authorBytes: [UInt8]
    /// The refs pointing at the commit (`%D`: `HEAD -> master`, `tag: v2.45.0`, `origin/next`).
    public var refs: [String]
    /// The subject line, exactly as git has it (any bytes; a long first paragraph joined).
    public var subjectBytes: [UInt8]

    /// Where the commit's spooled record is when a page kept only its start (a subject or an
    /// author longer than ``LineFile/keptBytes``): ``GitLog/whole(_:)`` reads it whole.
    var cut: SpooledRecord?

    /// A commit.
    public init(hash: String, shortHash: String, date: String, author: [UInt8], refs: [String] = [], subject: [UInt8]) {
        (self.hash, self.shortHash, self.date, authorBytes, self.refs, subjectBytes) = (hash, shortHash, date, author, refs, subject)
    }

    /// The author's name as text (replacement characters for bytes that are not UTF-8).
    public var author: String { String(decoding: authorBytes, as: UTF8.self) }

    /// The subject as text, cut at ``shownSubjectBytes`` bytes (at the last whole character
    /// before): what a screen shows and a search reads (a 10,000-line first paragraph is joined
    /// into one subject by git).
    public var subject: String {
        guard subjectBytes.count > Self.shownSubjectBytes else { return String(decoding: subjectBytes, as: UTF8.self) }
        let end = Line.wholeScalarsEnd(subjectBytes, before: Self.shownSubjectBytes)
        return String(decoding: subjectBytes[..<end], as: UTF8.self)
    }

    /// The most bytes of a subject shown or searched.
    public static let shownSubjectBytes = 4_096

    /// The line `history` prints when its output is not a terminal, byte for byte what
    /// `git log --format=%h%x09%ad%x09%an%x09%s --date=short` prints.
    public var line: [UInt8] {
        Array(shortHash.utf8) + [0x09] + Array(date.utf8) + [0x09] + authorBytes + [0x09] + subjectBytes
    }
}

/// Where a spooled record is in its spool file.
struct SpooledRecord: Sendable, Hashable {
    let offset: Int64
    let length: Int64
}

/// `git log` of a repository as an offset page source of commits.
///
/// git writes its whole log once, in the background, into a **spool** file — one commit per line,
/// its fields separated by NUL (which git cannot emit inside a field) — and pages are read from that
/// file by line number through a ``LineFile``: a page anywhere git has got to is one seek and a few
/// kilobytes, however far it is; a page past it waits for git. So reading the log costs what `git
/// log` costs, once: a jump, a search hit, G or a scroll back never asks git again, and memory is
/// the line file's checkpoints. A finished spool is kept for the next run with the same HEAD (and
/// paths), which then starts at once.
public final class GitLog: OffsetPageSource {
    public typealias Cursor = Int
    public typealias Item = Commit

    /// The repository (any folder inside it).
    public let repository: String
    /// Only the commits that change these paths (`history -- PATH`); all when empty.
    public let paths: [String]
    /// The folder of spool files.
    public let spoolFolder: URL
    private let spool = Mutex<LogSpool?>(nil)

    /// The fields of a record, in order: `%H %h %ad %an %D %s`. The date raw (seconds and offset),
    /// made `YYYY-MM-DD` here (``GitDate``): git itself fails on a date its `--date=short` cannot
    /// show (`@0 -1200`: "fatal: Timestamp before Unix epoch"), and the log stopped there.
    static let format = ["-z", "--date=raw", "--format=%H%x00%h%x00%ad%x00%an%x00%D%x00%s"]
    static let fields = 6

    /// The log of the repository at `repository`, spooled in `spoolFolder`.
    public init(repository: String, paths: [String] = [], spoolFolder: URL) {
        self.repository = repository
        self.paths = paths
        self.spoolFolder = spoolFolder
    }

    deinit {
        spool.withLock { $0?.stop() }
    }

    /// The spool folder cannot be made: a file is in its place (or in a parent's), or its parent
    /// cannot be written.
    public struct SpoolFolderProblem: Error, CustomStringConvertible {
        /// The folder asked for.
        public let folder: URL
        /// Why it cannot be made.
        public let reason: String

        init(folder: URL, error: any Error) {
            self.folder = folder
            // The nearest part of the path that exists: a file there is what is in the way.
            var path = folder.standardizedFileURL
            var inTheWay: String?
            while path.path != "/" {
                var isFolder: ObjCBool = false
                if FileManager.default.fileExists(atPath: path.path, isDirectory: &isFolder) {
                    if !isFolder.boolValue { inTheWay = path.path }
                    break
                }
                path = path.deletingLastPathComponent()
            }
            if let inTheWay {
                reason = "\(inTheWay) is not a folder"
            } else if let posix = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError, posix.domain == NSPOSIXErrorDomain {
                reason = String(cString: strerror(Int32(truncatingIfNeeded: posix.code)))
            } else {
                reason = "it cannot be written"
            }
        }

        /// What happened and what to do.
        public var description: String {
            "cannot make the log's folder \(folder.path) (\(reason)); give a folder that can be written with --cache, or --no-cache"
        }
    }

    /// Checks that git runs, `repository` is a repository and git log takes ``paths``; throws
    /// ``Git/Failure`` otherwise.
    public func check() async throws {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: repository, isDirectory: &isFolder), isFolder.boolValue else {
            throw Git.Failure.notAFolder(repository)
        }
        _ = try await Git.run(["rev-parse", "--git-dir"], in: repository)
        guard !paths.isEmpty else { return }
        // git parses the paths before it walks any commit, so this ends at once either way. A path
        // git refuses failed only the spool's git, after the screen was up: every row said so, and
        // the status line still said it was reading.
        do {
            _ = try await Git.run(["log", "--max-count=0", "--"] + paths, in: repository)
        } catch Git.Failure.failed(_, _, let message) {
            throw Git.Failure.badPaths(message: message)
        }
    }

    /// Starts reading the log (if it is not read already); pages wait for it as far as they need.
    public func start() async throws {
        _ = try await readingSpool()
    }

    private func readingSpool() async throws -> LogSpool {
        if let running = spool.withLock({ $0 }) { return running }
        let head = (try? await Git.run(["rev-parse", "HEAD"], in: repository)).map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
        let started = try LogSpool(repository: repository, paths: paths, head: head, folder: spoolFolder)
        let (chosen, extra) = spool.withLock { current -> (LogSpool, LogSpool?) in
            if let current { return (current, started) }
            current = started
            return (started, nil)
        }
        extra?.stop()
        return chosen
    }

    /// The number of commits, once git finished.
    public var knownTotal: Int? { spool.withLock { $0?.total } }

    /// Commits read from git so far, and whether it ended (read all, or failed: ``failure``).
    public var progress: (read: Int, finished: Bool) {
        spool.withLock { spool in spool.map { ($0.written, $0.total != nil || $0.failure != nil) } ?? (0, false) }
    }

    /// Why git stopped before the end of the log, if it did.
    public var failure: Git.Failure? { spool.withLock { $0?.failure } }

    /// `size` commits from `offset`, newest first.
    public func page(at offset: Int, size: Int) async throws -> Page<Int, Commit> {
        let spool = try await readingSpool()
        let (sum, overflow) = offset.addingReportingOverflow(max(0, size))
        let end = overflow ? Int.max : sum
        do {
            try await spool.wait(for: end)
        } catch let failure as Git.Failure {
            // git failed after the commits it wrote: the list ends with them (the failure is
            // ``failure``). A page cannot end in a failure: the paged rows would drop it whole.
            guard offset < spool.written else { throw failure }
        }
        let lines = try spool.lines(offset ..< end)
        // Every line is a commit, however long: a record cut to what a line keeps dropped out and
        // the rows after it moved up one (the last shown twice; seen with 5,000 tags on a commit).
        let commits = lines.map { Self.commit(fromSpooled: $0, spool: spool) }
        let last = max(0, offset) + commits.count  // no commit is before 0
        let total = spool.total ?? (spool.failure == nil ? nil : spool.written)
        let more = total.map { last < $0 } ?? (commits.count == size)
        return Page(items: commits, cursorAfter: more ? last : nil, itemsAfter: total.map { max(0, $0 - last) })
    }

    /// Every commit from `offset` on, in order, to `body` (a search); stops when `body` says so.
    /// Reads the spool, waiting for git as it goes.
    public func scan(from offset: Int, batch: Int = 2_000, _ body: (Int, Commit) -> Bool) async throws {
        let spool = try await readingSpool()
        let batch = max(1, batch)  // a batch of 0 read nothing for ever
        var next = max(0, offset)
        while true {
            try Task.checkCancellation()
            let asked = min(batch, Int.max - next)
            guard asked > 0 else { return }  // no commit past the end of the integers
            try await spool.wait(for: next + asked)
            let lines = try spool.lines(next ..< next + asked)
            for line in lines where !body(line.number, Self.commit(fromSpooled: line, spool: spool)) { return }
            next += lines.count
            if lines.count < asked, spool.total != nil { return }
        }
    }

    /// A spooled line's commit, its record cut where the line was (``Commit/cut`` says where the
    /// whole one is).
    static func commit(fromSpooled line: Line) -> Commit {
        var commit = commit(fromSpooled: line.bytes)
        if line.isCut { commit.cut = SpooledRecord(offset: line.offset, length: line.length) }
        return commit
    }

    /// ``commit(fromSpooled:)``, with the subject a line cut before it (an author of over 64 KiB)
    /// read from `spool`: a screen and a search show the subject of every commit.
    static func commit(fromSpooled line: Line, spool: LogSpool) -> Commit {
        var commit = commit(fromSpooled: line)
        if let cut = commit.cut, commit.subjectBytes.isEmpty, line.bytes.count(where: { $0 == 0 }) < fields - 1 {
            commit.subjectBytes = (try? spool.field(fields - 1, of: cut, upTo: Commit.shownSubjectBytes)) ?? []
        }
        return commit
    }

    /// The commit of a spool line (``LogParser``'s order: hash, short hash, date, refs, author,
    /// subject). Fields a cut line lacks are empty; a cut field holds what is there.
    static func commit(fromSpooled bytes: [UInt8]) -> Commit {
        let fields = bytes.split(separator: 0, maxSplits: fields - 1, omittingEmptySubsequences: false)
        func field(_ index: Int) -> ArraySlice<UInt8> { index < fields.count ? fields[index] : [] }
        var refs = String(decoding: field(3), as: UTF8.self).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if fields.count == 4 { refs = refs.dropLast() }  // the line ends in the refs: the last one is cut
        return Commit(
            hash: String(decoding: field(0), as: UTF8.self), shortHash: String(decoding: field(1), as: UTF8.self),
            date: GitDate.short(raw: field(2)), author: Array(field(4)), refs: refs, subject: Array(field(5))
        )
    }

    /// `commit` whole: a commit whose record a page cut (``Commit/cut``) read again from the spool,
    /// for output that must be git's bytes. Throws if the spool cannot be read.
    public func whole(_ commit: Commit) async throws -> Commit {
        guard let cut = commit.cut else { return commit }
        return Self.commit(fromSpooled: try await readingSpool().record(cut))
    }

    /// Parses `git log` output in ``format`` (the tests' and the fuzzer's way in): NUL-separated
    /// fields, six per commit; an incomplete last record is dropped.
    public static func parse(_ data: Data) -> [Commit] {
        var parser = LogParser()
        return parser.take(Array(data)).map { commit(fromSpooled: $0) }
    }
}

/// Turns `git log -z` output in ``GitLog/format`` into spool lines, however it is cut into chunks:
/// six NUL-separated fields make a record; its line is the fields joined by NUL, with any line break
/// in them made a space (git puts none there; a spool line must be one line). The refs come before
/// the author and the subject, cut to ``maximumRefsBytes`` at a ref's end: a page keeps the first
/// ``LineFile/keptBytes`` of a line, and what may run longer (a subject, an author) is last.
struct LogParser {
    /// The most bytes of refs a spool line holds (a commit with 5,000 tags has 150 KB of them; a
    /// screen shows a third of a row at most).
    static let maximumRefsBytes = 4_096

    private var fields: [[UInt8]] = []
    private var partial: [UInt8] = []

    /// The complete records' lines in `chunk` (and what was pending).
    mutating func take(_ chunk: [UInt8]) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        var start = chunk.startIndex
        while let end = chunk[start...].firstIndex(of: 0) {
            partial += chunk[start..<end]
            fields.append(partial)
            partial = []
            start = end + 1
            if fields.count == GitLog.fields {
                let spooled = [fields[0], fields[1], fields[2], Self.cutRefs(fields[4]), fields[3], fields[5]]
                lines.append(Array(spooled.joined(separator: [0])).map { $0 == 0x0A ? 0x20 : $0 })
                fields = []
            }
        }
        partial += chunk[start...]
        return lines
    }

    /// `refs` (`%D`: comma-separated) cut to at most ``maximumRefsBytes`` at a ref's end.
    static func cutRefs(_ refs: [UInt8]) -> [UInt8] {
        guard refs.count > maximumRefsBytes else { return refs }
        let comma = refs[..<maximumRefsBytes].lastIndex(of: UInt8(ascii: ",")) ?? 0
        return Array(refs[..<comma])
    }
}

/// One run of `git log` writing its commits into a spool file, and the ``LineFile`` that reads it.
final class LogSpool: Sendable {
    let file: LineFile
    /// The spool, open for reading whole records (``record(_:)``): open from the start, it is the
    /// same file after it is renamed finished.
    private let reader: FileHandle
    private let process: Process?
    private let state = Mutex(State())

    private struct State {
        var written = 0
        var total: Int?
        var failure: Git.Failure?
        var waiters: [UUID: (count: Int, continuation: CheckedContinuation<Void, any Error>)] = [:]
    }

    /// Starts git writing the log of `repository` at `head` into a spool in `folder` — or, when a
    /// finished spool of that head is there, reads it as it is.
    init(repository: String, paths: [String], head: String?, folder: URL) throws {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw GitLog.SpoolFolderProblem(folder: folder, error: error)
        }
        let key = LogSpool.key(repository: repository, paths: paths, head: head)
        let finished = folder.appendingPathComponent(key + ".log")
        if let head, !head.isEmpty, FileManager.default.fileExists(atPath: finished.path) {
            file = try LineFile(path: finished.path)
            reader = try FileHandle(forReadingFrom: finished)
            process = nil
            try state.withLock { state in
                // A finished spool is whole: its lines are its commits.
                try file.scanToEnd()
                state.written = file.lineCount ?? 0
                state.total = state.written
            }
            return
        }
        LogSpool.prune(folder)
        let writing = folder.appendingPathComponent(key + ".\(getpid()).writing")
        guard FileManager.default.createFile(atPath: writing.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: writing.path])
        }
        guard let output = FileHandle(forWritingAtPath: writing.path), let executable = Git.executable else { throw Git.Failure.notInstalled }
        file = try LineFile(path: writing.path)
        reader = try FileHandle(forReadingFrom: writing)
        let process = Process()
        process.executableURL = executable
        process.arguments = ["-C", repository, "log"] + GitLog.format + (paths.isEmpty ? [] : ["--"] + paths)
        process.environment = ProcessInfo.processInfo.environment.merging(["LC_ALL": "C", "GIT_PAGER": "cat"]) { $1 }
        let pipe = Pipe(), errors = Pipe()
        process.standardOutput = pipe
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.process = process
        let reader = pipe.fileHandleForReading
        let messages = PipeReader(errors.fileHandleForReading)
        Thread.detachNewThread { [self] in
            var parser = LogParser()
            var written = 0
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            // read(2) and write(2), not FileHandle: its reads and writes trap on an error (a full
            // disk, a file size limit, a signal's EINTR crashed `history`).
            while true {
                let count = buffer.withUnsafeMutableBytes { avenues_examples_read(reader.fileDescriptor, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                let lines = parser.take(Array(buffer[..<count]))
                guard !lines.isEmpty else { continue }
                var bytes: [UInt8] = []
                for line in lines { bytes += line + [0x0A] }
                let code = bytes.withUnsafeBytes { avenues_examples_write_all(output.fileDescriptor, $0.baseAddress, $0.count) }
                guard code == 0 else {
                    process.terminate()
                    try? output.close()
                    try? FileManager.default.removeItem(at: writing)
                    fail(.spoolNotWritten(path: writing.path, reason: String(cString: strerror(code))))
                    return
                }
                written += lines.count
                progressed(written, done: false)
            }
            try? output.close()
            process.waitUntilExit()
            let message = String(decoding: messages.wait(), as: UTF8.self)
            if process.terminationStatus == 0 {
                try? FileManager.default.moveItem(at: writing, to: finished)
                progressed(written, done: true)
            } else if message.contains("does not have any commits") || message.contains("unknown revision") {
                progressed(0, done: true)  // a repository with no commits yet
            } else {
                fail(.failed(arguments: ["log"], status: process.terminationStatus, message: message))
            }
        }
    }

    /// A name for the spool of `repository`'s log at `head` (and `paths`).
    static func key(repository: String, paths: [String], head: String?) -> String {
        let path = URL(fileURLWithPath: repository).standardizedFileURL.path
        let text = ([path, head ?? "no-head"] + paths).joined(separator: "\u{0}")
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return "log-v3-" + String(hash, radix: 16) + "-" + String((head ?? "none").prefix(12))
    }

    /// Keeps the four newest finished spools, and deletes spools abandoned by runs that ended.
    static func prune(_ folder: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let finished = names.filter { $0.hasSuffix(".log") }.compactMap { name -> (String, Date)? in
            let date = (try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(name).path)[.modificationDate] as? Date) ?? .distantPast
            return (name, date)
        }.sorted { $0.1 > $1.1 }
        for (name, _) in finished.dropFirst(4) { try? FileManager.default.removeItem(at: folder.appendingPathComponent(name)) }
        for name in names where name.hasSuffix(".writing") {
            let pid = name.split(separator: ".").dropLast().last.flatMap { Int32($0) } ?? 0
            if pid > 0, kill(pid, 0) != 0, errno == ESRCH { try? FileManager.default.removeItem(at: folder.appendingPathComponent(name)) }
        }
    }

    var written: Int { state.withLock { $0.written } }
    var total: Int? { state.withLock { $0.total } }
    var failure: Git.Failure? { state.withLock { $0.failure } }

    private func progressed(_ count: Int, done: Bool) {
        _ = file.checkForChanges()
        let ready = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.written = count
            if done { state.total = count }
            let ready = state.waiters.filter { done || $0.value.count <= count }
            for id in ready.keys { state.waiters[id] = nil }
            return ready.values.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    private func fail(_ failure: Git.Failure) {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.failure = failure
            defer { state.waiters = [:] }
            return state.waiters.values.map(\.continuation)
        }
        for continuation in waiting { continuation.resume(throwing: failure) }
    }

    /// Returns once `count` commits are in the spool, or git finished.
    func wait(for count: Int) async throws {
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let now: Result<Void, any Error>? = state.withLock { state in
                    if let failure = state.failure { return .failure(failure) }
                    if state.total != nil || state.written >= count { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters[id] = (count, continuation)
                    return nil
                }
                if let now { continuation.resume(with: now) }
            }
        } onCancel: {
            let waiting = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiting?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The spooled lines in `range` (those written so far).
    func lines(_ range: Range<Int>) throws -> [Line] {
        let written = self.written
        let end = min(range.upperBound, total ?? written)
        guard range.lowerBound < end else { return [] }
        _ = file.checkForChanges()
        return try file.lines(range.lowerBound ..< end)
    }

    /// The most bytes of one record read whole (a subject of 64 MB is printed cut there).
    static let maximumRecordBytes: Int64 = 64 << 20

    /// The bytes of the record at `record`, whole (up to ``maximumRecordBytes``).
    func record(_ record: SpooledRecord) throws -> [UInt8] {
        let count = Int(clamping: min(max(0, record.length), Self.maximumRecordBytes))
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read = bytes.withUnsafeMutableBytes { buffer in
                pread(reader.fileDescriptor, buffer.baseAddress.map { $0 + done }, count - done, off_t(clamping: record.offset + Int64(done)))
            }
            if read < 0, errno == EINTR { continue }
            guard read > 0 else { break }  // the spool is shorter than its index said: what is there
            done += read
        }
        return Array(bytes[..<done])
    }

    /// The first `limit` bytes of field `index` (0-based, NUL-separated) of the record at `record`,
    /// read a block at a time: memory is a block and `limit`, however long the fields before it.
    func field(_ index: Int, of record: SpooledRecord, upTo limit: Int) throws -> [UInt8] {
        let block = 64 * 1024
        var buffer = [UInt8](repeating: 0, count: block)
        var field: [UInt8] = []
        var separators = 0
        var offset = max(0, record.offset)
        let (sum, overflow) = offset.addingReportingOverflow(max(0, record.length))
        let end = overflow ? Int64.max : sum
        while offset < end, field.count < limit {
            let wanted = Int(min(Int64(block), end - offset))
            let read = buffer.withUnsafeMutableBytes { pread(reader.fileDescriptor, $0.baseAddress, wanted, off_t(clamping: offset)) }
            if read < 0, errno == EINTR { continue }
            guard read > 0 else { break }  // the spool is shorter than its index said
            for byte in buffer[..<read] {
                if separators == index {
                    if byte == 0 { return field }
                    field.append(byte)
                    if field.count == limit { break }
                } else if byte == 0 {
                    separators += 1
                }
            }
            offset += Int64(read)
        }
        return field
    }

    /// Stops git, if it still runs.
    func stop() {
        if let process, process.isRunning { process.terminate() }
    }
}

extension LineFile {
    /// Scans to the end now (for a finished file, on the calling thread).
    func scanToEnd() throws {
        _ = try lines(Int.max - 1 ..< Int.max)
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#else
#error("Unsupported platform: Avenues needs Darwin, Glibc or Musl")
#endif
