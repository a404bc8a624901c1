import Avenues
import Foundation
@testable import GitHistory
import Synchronization
import Testing

@Suite("git log records and diff stats")
struct GitParsingTests {
    /// Seen 2026-11-23: an author name with 0x1F (the old field separator) shifted the columns.
    @Test func recordsSplitOnNulSoAnyByteInAFieldStaysInIt() {
        let latin1: [UInt8] = [0x52, 0xE9, 0x6D, 0x69]  // "Rémi" in Latin-1: not UTF-8
        var data = Array("aaaa\0aa\u{0}2024-01-02\0Ev\u{1F}il\0HEAD -> main, tag: v1\0tabs\there and a \u{1F} unit separator\0".utf8)
        data += Array("bbbb\0bb\u{0}2024-01-01\0".utf8) + latin1 + Array("\0\0\0".utf8)
        data += Array("cccc\0cc\0incomplete".utf8)
        let commits = GitLog.parse(Data(data))
        #expect(commits == [
            Commit(hash: "aaaa", shortHash: "aa", date: "2024-01-02", author: Array("Ev\u{1F}il".utf8), refs: ["HEAD -> main", "tag: v1"],
                   subject: Array("tabs\there and a \u{1F} unit separator".utf8)),
            Commit(hash: "bbbb", shortHash: "bb", date: "2024-01-01", author: latin1, subject: []),
        ])
        // Piped, the line is git's bytes: the Latin-1 author is not turned into U+FFFD.
        #expect(commits[1].line == Array("bb\t2024-01-01\t".utf8) + latin1 + [0x09])
        #expect(commits[1].author.contains("\u{FFFD}"))
    }

    @Test func aRecordCutAnywhereByTheReadsParsesTheSame() {
        let text = Array("aaaa\0aa\u{0}2024-01-02\0Zoë\0\0first\0bbbb\0bb\u{0}2024-01-01\0Ann\0\0second\0".utf8)
        for cut in 0...text.count {
            var parser = LogParser()
            let lines = parser.take(Array(text[..<cut])) + parser.take(Array(text[cut...]))
            #expect(lines.map { GitLog.commit(fromSpooled: $0) }.map(\.subject) == ["first", "second"], "cut at \(cut)")
        }
    }

    @Test func aHugeSubjectIsShownAndSearchedCutButPrintedWhole() {
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: 500_000)
        let commit = Commit(hash: "h", shortHash: "h", date: "d", author: [], subject: long)
        #expect(commit.subject.utf8.count == Commit.shownSubjectBytes)
        #expect(commit.line.count == 500_000 + 5)
        // Cut inside a character, the subject ends before it, not on a replacement character.
        let wide = Commit(hash: "h", shortHash: "h", date: "d", author: [], subject: Array(("xx" + String(repeating: "中", count: 2_000)).utf8))
        #expect(!wide.subject.contains("\u{FFFD}") && wide.subject.utf8.count == Commit.shownSubjectBytes - 2)
    }

    /// Probe of 2026-11-26: `history --page-size 9223372036854775807` trapped (two pages' worth of
    /// commits, the most kept in memory, overflowed).
    @Test(arguments: [1, 50, Int.max / 2, Int.max / 2 + 1, Int.max])
    func anyPageSizeMakesAConfiguration(pageSize: Int) {
        let configuration = HistoryRows.configuration(pageSize: pageSize)
        #expect(configuration.pageSize == pageSize)
        #expect(configuration.maxResident >= max(2_000, pageSize))
    }

    @Test func numstatSumsTextCountsBinaryFilesAndSaturates() {
        let numstat = Data("3\t1\tREADME.md\n-\t-\tlogo.png\n10\t0\tdir/a b.txt\nnot a numstat line\n\n".utf8)
        #expect(DiffStat.parse(numstat) == DiffStat(files: 3, added: 13, removed: 1))
        #expect(DiffStat.parse(numstat).description == "3 files +13 −1")
        #expect(DiffStat(files: 1, added: 0, removed: 2).description == "1 file +0 −2")
        let huge = Data("\(Int.max)\t\(Int.max)\ta\n5\t5\tb\n-7\t-7\tc\n".utf8)
        #expect(DiffStat.parse(huge) == DiffStat(files: 3, added: .max, removed: .max))
        #expect(DiffStat.parse(Data()) == DiffStat(files: 0, added: 0, removed: 0))
    }
}

@Suite("Following git's progress")
struct LogProgressWatchTests {
    /// CI, 2026-11-28: `history -- file07.txt` read all 666 commits in one look and git finished in
    /// the next, walking older history for the path. The watch redrew only when the count moved, so
    /// "≥ 666" and "reading git log: 666 commits" stayed on the screen for good.
    @Test func finishingWithTheCountUnchangedStillChangesTheScreen() {
        var watch = LogProgressWatch()
        let looks: [(read: Int, finished: Bool)] = [(0, false), (666, false), (666, false), (666, true), (666, true)]
        let redrawn = looks.map { watch.changes($0) }
        #expect(redrawn == [true, true, false, true, false])
        var fresh = LogProgressWatch()
        let first = fresh.changes((0, true))
        #expect(first)  // an empty history, finished at the first look
    }
}

@Suite("Batching")
struct BatcherTests {
    @Test func requestsMadeTogetherAreAnsweredByOneRunWithEveryKeyOnce() async throws {
        let runs = Mutex<[[Int]]>([])
        let batcher = Batcher<Int, String>(maxBatch: 6, gather: .seconds(3600)) { keys in  // runs when full
            runs.withLock { $0.append(keys.sorted()) }
            return Dictionary(uniqueKeysWithValues: keys.map { ($0, "value \($0)") })
        }
        let answers = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for key in [1, 2, 3, 3, 4, 5] { group.addTask { (key, try await batcher.value(for: key)) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.sorted { $0.0 < $1.0 }.map(\.1) == ["value 1", "value 2", "value 3", "value 3", "value 4", "value 5"])
        #expect(runs.withLock { $0 } == [[1, 2, 3, 4, 5]])
    }

    /// Requests from many tasks at once: no run gets more than `maxBatch` requests. A batch found
    /// full was closed only later, in a second look at the lock, and requests made in between
    /// joined it (2026-11-29: a run of more than 3 keys with `maxBatch: 3` in each of 5 tries).
    @Test func requestsFromManyTasksAtOnceNeverOverfillABatch() async throws {
        let runs = Mutex<[Int]>([])
        // A short gather: a batch left part full (the last one, or any) runs on its timer.
        let batcher = Batcher<Int, Int>(maxBatch: 3, gather: .milliseconds(2)) { keys in
            runs.withLock { $0.append(keys.count) }
            return Dictionary(uniqueKeysWithValues: keys.map { ($0, $0) })
        }
        let answered = try await withThrowingTaskGroup(of: Int.self) { group in
            for key in 0 ..< 3_000 { group.addTask { try await batcher.value(for: key) } }
            return try await group.reduce(into: 0) { count, _ in count += 1 }
        }
        #expect(answered == 3_000)
        let sizes = runs.withLock { $0 }
        #expect(sizes.allSatisfy { $0 <= 3 }, "batches of \(Set(sizes).sorted()) keys")
    }

    @Test func aBatchNobodyWaitsForIsCancelledAndTheNextRequestOpensANewOne() async throws {
        let started = AsyncStream<Void>.makeStream()
        let cancelled = AsyncStream<Void>.makeStream()
        let batcher = Batcher<Int, Int>(maxBatch: 2, gather: .seconds(3600)) { keys in
            if keys.contains(1) {  // the first batch waits until it is cancelled
                started.continuation.yield()
                await withTaskCancellationHandler {
                    for await _ in AsyncStream<Void>.makeStream().stream {}
                } onCancel: {
                    cancelled.continuation.yield()
                }
                throw CancellationError()
            }
            return Dictionary(uniqueKeysWithValues: keys.map { ($0, $0 * 10) })
        }
        let first = Task { try await batcher.value(for: 1) }
        let second = Task { try await batcher.value(for: 2) }
        var startedEvents = started.stream.makeAsyncIterator()
        _ = await startedEvents.next()
        first.cancel()
        second.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        await #expect(throws: CancellationError.self) { try await second.value }
        var cancelledEvents = cancelled.stream.makeAsyncIterator()
        _ = await cancelledEvents.next()  // the run itself saw the cancellation
        async let third = batcher.value(for: 3)
        async let fourth = batcher.value(for: 4)
        #expect(try await [third, fourth] == [30, 40])
    }
}

@Suite("git log as a page source", .enabled(if: Git.executable != nil, "needs git"))
struct GitLogTests {
    /// Probe of 2026-11-26: `history --cache FILE` said `Error Domain=NSCocoaErrorDomain Code=512
    /// "(null)" UserInfo={…}`. A spool folder that cannot be made says where and why.
    @Test func aSpoolFolderThatCannotBeMadeSaysWhereAndWhy() async throws {
        let repository = try TestRepository(commits: 3)
        defer { repository.remove() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-folder-\(UUID().uuidString)")
        try Data("x".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let log = GitLog(repository: repository.path, spoolFolder: file.appendingPathComponent("history-logs"))
        do {
            try await log.start()
            Issue.record("a spool folder was made inside a file")
        } catch let problem as GitLog.SpoolFolderProblem {
            #expect(problem.description == "cannot make the log's folder \(file.path)/history-logs (\(file.path) is not a folder); give a folder that can be written with --cache, or --no-cache")
        }
    }

    /// Seen 2026-11-29: a commit dated `@0 -1200` (before 1970 in UTC, as imports from older
    /// systems have) made `git log --date=short` fail — "fatal: Timestamp before Unix epoch" — and
    /// `history` showed the commits before it only. The log is read raw and dated here.
    @Test func aCommitGitCannotDateIsListedWithTheCommitsAfterIt() async throws {
        let repository = try TestRepository(commits: 5, dates: [2: "0 -1200", 3: "253402300799 +1400", 4: "1 +0000"])
        defer { repository.remove() }
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: spool) }
        let log = GitLog(repository: repository.path, spoolFolder: spool)
        var commits: [Commit] = []
        var cursor = 0
        while true {
            let page = try await log.page(at: cursor, size: 2)
            commits += page.items
            guard let next = page.cursorAfter else { break }
            cursor = next
        }
        #expect(commits.map(\.date) == ["2020-09-13", "1970-01-01", "10000-01-01", "1969-12-31", "2020-09-13"])
        #expect(commits.map(\.subject) == (1 ... 5).reversed().map { "Commit \($0)" })
    }

    /// A commit's view is what `git show` prints. Seen 2026-11-29: for a commit dated `@0 -1200`
    /// git show failed, its message went nowhere, and the view showed the commit's first line
    /// alone. Such a date is shown raw; any other failure ends the view with git's message.
    @Test func aCommitIsShownAsGitShowPrintsItAndAFailureSaysWhy() async throws {
        let repository = try TestRepository(commits: 3, dates: [2: "0 -1200"])
        defer { repository.remove() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("show-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let commits = try await repository.log()
        func shown(_ hash: String) async throws -> [String] {
            let show = try CommitShow(hash: hash, repository: repository.path, folder: folder)
            return try await show.page(at: 0, size: 10_000).items.map(\.text)
        }
        let arguments = ["show", "--stat", "--patch", "--format=fuller", "--color=never"]
        let newest = try await Git.run(arguments + [commits[0].hash, "--"], in: repository.path)
        #expect(try await shown(commits[0].hash) == String(decoding: newest, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init))
        let undatable = try await Git.run(arguments + ["--date=raw", commits[1].hash, "--"], in: repository.path)
        let lines = try await shown(commits[1].hash)
        #expect(lines == String(decoding: undatable, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init))
        #expect(lines.contains("AuthorDate: 0 -1200") && lines.contains { $0.contains("notes.txt") })
        let missing = String(repeating: "0", count: 40)
        #expect(try await shown(missing).last == "[git show failed (status 128): fatal: bad object \(missing)]")
    }

    /// The date of a raw git date, against Foundation's calendar, for times from 1653 to 5138
    /// and offsets from −14:00 to +14:00; and the ends of what a raw date can say.
    @Test func aRawDateIsTheDayFoundationsCalendarGives() throws {
        var generator = SplitMix64(seed: 9)
        for _ in 0 ..< 3_000 {
            let seconds = Int64.random(in: -10_000_000_000 ... 100_000_000_000, using: &generator)
            let minutes = Int.random(in: -14 * 60 ... 14 * 60, using: &generator)
            let zone = String(format: "%@%02d%02d", minutes < 0 ? "-" : "+", abs(minutes) / 60, abs(minutes) % 60)
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = try #require(TimeZone(secondsFromGMT: minutes * 60))
            let parts = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: TimeInterval(seconds)))
            let expected = String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
            #expect(GitDate.short(raw: Array("\(seconds) \(zone)".utf8)) == expected, "\(seconds) \(zone)")
        }
        // Leap days and the turn of centuries, which Foundation's proleptic calendar (Julian before
        // 1582) does not test.
        for (raw, date) in [
            ("951782400 +0000", "2000-02-29"), ("4107456000 +0000", "2100-02-28"), ("4107542400 +0000", "2100-03-01"),
            ("-62135596800 +0000", "0001-01-01"), ("-62135596801 +0000", "0000-12-31"), ("0 +0000", "1970-01-01"),
            ("-1 +0000", "1969-12-31"), ("86399 -0000", "1970-01-01"), ("9223372036854775807 +0000", "292277026596-12-04"),
            ("-9223372036854775808 +0000", "-292277022657-01-27"),
        ] {
            #expect(GitDate.short(raw: Array(raw.utf8)) == date, "\(raw)")
        }
        // Not a raw date, or one past what fits: shown as it is.
        for hostile in ["", "2020-01-01", "99999999999999999999 +0000", "9223372036854775807 +1400", "-9223372036854775808 -0001",
                        "5 +123", "5 +12345", "5 0000", "5 ++123", "5 +12a4", "5  +0000", "5 +0000 x", "\u{1B}[2J 5"] {
            #expect(GitDate.short(raw: Array(hostile.utf8)) == hostile, "\(hostile.debugDescription)")
        }
    }

    @Test func everyPageInOrderOrByOffsetIsWhatGitLogSays() async throws {
        let repository = try TestRepository(commits: 250)
        defer { repository.remove() }
        let expected = try await repository.log()
        #expect(expected.count == 250)

        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: spool) }
        let log = GitLog(repository: repository.path, spoolFolder: spool)
        var streamed: [Commit] = []
        var cursor = 0
        while true {  // in order: one streaming git log
            let page = try await log.page(at: cursor, size: 40)
            streamed += page.items
            #expect(page.itemsAfter == nil || page.itemsAfter == 250 - streamed.count)
            guard let next = page.cursorAfter else { break }
            cursor = next
        }
        #expect(streamed == expected)

        for offset in [200, 0, 17, 249, 250, 300] {  // out of order: read from the spool
            let page = try await log.page(at: offset, size: 40)
            #expect(page.items == Array(expected[min(offset, 250) ..< min(offset + 40, 250)]), "offset \(offset)")
            #expect((page.cursorAfter == nil) == (offset + 40 >= 250), "offset \(offset)")
        }
        // Probe of 2026-11-26: a negative offset trapped (the commits after the page were counted
        // from it). No commit is before 0: such a page is empty and ends at 0.
        for (offset, size) in [(Int.min, Int.max), (-3, 10), (Int.max, 10), (Int.max - 1, Int.max)] {
            let page = try await log.page(at: offset, size: size)
            #expect(page.items.isEmpty, "offset \(offset)")
            #expect(page.itemsAfter == (offset < 0 ? 250 : 0), "offset \(offset)")
        }
        // A search from the end of the integers finds nothing; a batch of 0 (it looped for ever)
        // is a batch of 1.
        var found = 0
        try await log.scan(from: .max) { _, _ in found += 1; return true }
        #expect(found == 0)
        try await log.scan(from: 240, batch: 0) { _, _ in found += 1; return true }
        #expect(found == 10)
        // A second log of the same HEAD reads the finished spool: git is not asked for the log again.
        let again = GitLog(repository: repository.path, spoolFolder: spool)
        try await again.start()
        #expect(again.knownTotal == 250)
        #expect(try await again.page(at: 100, size: 5).items == Array(expected[100..<105]))
    }

    /// Seen 2026-11-27: a commit with 5,000 tags (170 KB of refs) made a spool line longer than a
    /// page keeps (64 KiB): the commit dropped out of its page, the rows after it moved up one and
    /// the last commit showed twice, on the screen and piped. A subject past 64 KiB was printed cut.
    @Test func aRecordLongerThanALineKeepsIsStillOneCommitAndIsPrintedWhole() async throws {
        let huge = "Huge subject " + String(repeating: "words of a very long first paragraph ", count: 4_000)
        let repository = try TestRepository(commits: 30, subjects: [12: huge], tags: 5_000, taggedCommits: [20])
        defer { repository.remove() }
        let expected = try await repository.log()
        #expect(expected.count == 30)
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: spool) }
        let log = GitLog(repository: repository.path, spoolFolder: spool)
        let page = try await log.page(at: 0, size: 100)
        #expect(page.items.map(\.hash) == expected.map(\.hash))
        #expect(page.cursorAfter == nil && page.itemsAfter == 0)
        // The tagged commit shows its first refs (cut at a ref's end) and its subject.
        let tagged = try #require(page.items.first { $0.hash == expected[10].hash })
        #expect(tagged.subject == "Commit 20" && tagged.refs.count > 50 && tagged.refs.count < 5_000)
        #expect(tagged.refs.allSatisfy { $0.hasPrefix("tag: a-rather-long-tag-name-20-") && !$0.hasSuffix("-") })
        // The huge subject is cut on the page, whole when printed.
        let cut = try #require(page.items.first { $0.hash == expected[18].hash })
        #expect(cut.subjectBytes.count < expected[18].subjectBytes.count && cut.cut != nil)
        #expect(try await log.whole(cut).line == expected[18].line)
        let rows = HistoryRows(log: GitLog(repository: repository.path, spoolFolder: spool), pageSize: 8, statsFolder: nil)
        var printed: [[UInt8]] = []
        await rows.printAll(ahead: 16) { printed.append($0.line) }
        #expect(printed == expected.map(\.line))
    }

    /// Seen 2026-11-27: a commit whose author's name is 70 KB made its spool line longer than a
    /// page keeps, cut inside the author: the screen showed no subject for it and a search for its
    /// subject found nothing.
    @Test func aCommitWithAHugeAuthorStillShowsAndFindsItsSubject() async throws {
        let author = String(repeating: "A", count: 70_000)
        let repository = try TestRepository(commits: 6, authors: [3: author])
        defer { repository.remove() }
        let expected = try await repository.log()
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: spool) }
        let log = GitLog(repository: repository.path, spoolFolder: spool)
        let page = try await log.page(at: 0, size: 10)
        #expect(page.items.map(\.hash) == expected.map(\.hash))
        let huge = try #require(page.items.first { $0.hash == expected[3].hash })
        #expect(huge.cut != nil && huge.authorBytes.count < 70_000)
        #expect(huge.subject == "Commit 3")
        var found: [Int] = []
        try await log.scan(from: 0) { number, commit in
            if commit.subject == "Commit 3" { found.append(number) }
            return true
        }
        #expect(found == [3])
        #expect(try await log.whole(huge).line == expected[3].line)
    }

    @Test func aSpoolLineCutAnywhereIsOneCommit() {
        var parser = LogParser()
        let line = parser.take(Array("aaaa\0aa\u{0}2024-01-02\0Ann\0tag: v1, tag: v2\0subject\0".utf8))[0]
        for end in 0 ... line.count {
            let commit = GitLog.commit(fromSpooled: Array(line[..<end]))
            #expect(commit.hash == String(decoding: line.prefix(min(end, 4)), as: UTF8.self))
        }
        // Refs come before the author and the subject, cut at a ref's end.
        #expect(GitLog.commit(fromSpooled: Array(line.prefix(30))).refs == ["tag: v1"])
        let refs = (0 ..< 1_000).map { "tag: t\($0)" }.joined(separator: ", ")
        let cutRefs = LogParser.cutRefs(Array(refs.utf8))
        #expect(cutRefs.count <= LogParser.maximumRefsBytes && refs.utf8.starts(with: cutRefs))
        #expect(String(decoding: cutRefs, as: UTF8.self).hasSuffix("tag: t\(String(decoding: cutRefs, as: UTF8.self).split(separator: ",").count - 1)"))
    }

    @Test func aPathLimitsTheLogAsGitLogDoes() async throws {
        let repository = try TestRepository(commits: 30)
        defer { repository.remove() }
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: spool) }
        let expected = GitLog.parse(try await Git.run(["log"] + GitLog.format + ["--", "notes.txt"], in: repository.path))
        let log = GitLog(repository: repository.path, paths: ["notes.txt"], spoolFolder: spool)
        let page = try await log.page(at: 0, size: 100)
        #expect(!expected.isEmpty && page.items == expected)
    }

    /// Seen 2026-11-29: `history REPO -- ':(bad'` and `-- ../x` drew the whole screen, every row
    /// the same git error and the status line "reading git log: 0 commits" for ever.
    @Test func pathsGitLogRefusesAreARefusalBeforeAnyScreen() async throws {
        let repository = try TestRepository(commits: 3)
        defer { repository.remove() }
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: spool) }
        for paths in [[":(bad"], ["../outside"], ["notes.txt", ":(bad"]] {
            let error = await #expect(throws: Git.Failure.self) { try await GitLog(repository: repository.path, paths: paths, spoolFolder: spool).check() }
            guard case .badPaths(let message)? = error else {
                Issue.record("\(paths): \(String(describing: error))")
                continue
            }
            #expect(message.contains("fatal:") && "\(error!)".contains("give paths inside the repository"), "\(message)")
        }
        // Paths git takes, matched by no commit or by some, pass.
        try await GitLog(repository: repository.path, paths: ["no-such-file"], spoolFolder: spool).check()
        try await GitLog(repository: repository.path, paths: ["notes.txt", "*.bin"], spoolFolder: spool).check()
    }

    /// Seen 2026-11-29 on a repository with a missing commit object, 150 commits down: git log
    /// wrote 149 commits and failed. The page of paged rows holding the 149th failed whole, so the
    /// screen showed rows 100–148 empty and `history | cat` printed 100 commits and exited 0.
    @Test func aLogGitCannotFinishShowsEveryCommitItWroteAndSaysWhy() async throws {
        let repository = try TestRepository(commits: 120)
        defer { repository.remove() }
        let expected = try await repository.log()
        // git writes the 69 commits before the one whose parent is lost, then fails.
        try await repository.loseCommit(expected[70].hash)
        let written = Array(expected[..<69])
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: spool) }

        let log = GitLog(repository: repository.path, spoolFolder: spool)
        try await log.check()
        let page = try await log.page(at: 50, size: 50)
        #expect(page.items == Array(written[50...]) && page.cursorAfter == nil && page.itemsAfter == 0)
        await #expect(throws: Git.Failure.self) { try await log.page(at: 69, size: 50) }
        #expect(log.progress.read == 69 && log.progress.finished)
        #expect(log.failure.map { "\($0)".contains("git log failed") } == true)

        // Pages of 16 end between the commits written (64 and 69): each is shown and printed.
        let rows = HistoryRows(log: GitLog(repository: repository.path, spoolFolder: spool), pageSize: 16, statsFolder: nil)
        var printed: [Commit] = []
        let failure = await rows.printAll(ahead: 32) { printed.append($0) }
        #expect(printed.map(\.hash) == written.map(\.hash))
        #expect(failure.map { "\($0)".contains("git log failed") } == true)
        #expect(rows.count == .exact(69))
    }

    @Test func historyRowsPrintTheWholeLogInOrderWithBoundedLookAhead() async throws {
        let repository = try TestRepository(commits: 250)
        defer { repository.remove() }
        let expected = try await repository.log()
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("spool-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: spool) }
        let rows = HistoryRows(log: GitLog(repository: repository.path, spoolFolder: spool), pageSize: 16, statsFolder: nil)
        var printed: [Commit] = []
        let failure = await rows.printAll(ahead: 32) { printed.append($0) }
        #expect(printed == expected && failure == nil)
        #expect(rows.commits.count == .exact(250))
    }

    @Test func diffStatsAreGitShowNumstatSummedAlsoInABatch() async throws {
        let repository = try TestRepository(commits: 12)
        defer { repository.remove() }
        let commits = try await repository.log()
        let stats = DiffStats(repository: repository.path)
        let head = try await stats.process(commits[0].hash)
        // Commit 12 rewrites notes.txt with 12 lines (11 before).
        #expect(head == DiffStat(files: 1, added: 12, removed: 11))
        // All twelve at once (one git process): each is what git show says about that commit alone.
        let batched = try await withThrowingTaskGroup(of: (String, DiffStat).self) { group in
            for commit in commits { group.addTask { (commit.hash, try await stats.process(commit.hash)) } }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for commit in commits {
            let alone = DiffStat.parse(try await Git.run(["show", "--numstat", "--format=", commit.hash], in: repository.path))
            #expect(batched[commit.hash] == alone, "\(commit.subject)")
        }
        #expect(batched[commits[7].hash] == DiffStat(files: 2, added: 5, removed: 4))  // commit 5: a binary blob too
    }

    /// Seen 2026-11-29: under `history -- blob.bin` a commit's stat counted every file it changed,
    /// where `git log --stat -- blob.bin` counts that one.
    @Test func underPathsAStatCountsThosePathsAndIsKeptApartFromTheWholeCommits() async throws {
        let repository = try TestRepository(commits: 12)
        defer { repository.remove() }
        let commits = try await repository.log()
        let tenth = commits[2].hash  // commit 10 changes notes.txt and blob.bin
        #expect(try await DiffStats(repository: repository.path, paths: ["blob.bin"]).process(tenth) == DiffStat(files: 1, added: 0, removed: 0))
        #expect(try await DiffStats(repository: repository.path).process(tenth).files == 2)
        // Through the rows, over one stats database: the stat under paths, then the whole one.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("stats-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        for (paths, files) in [(["blob.bin"], 1), ([], 2), (["blob.bin"], 1)] {
            let log = GitLog(repository: repository.path, paths: paths, spoolFolder: folder.appendingPathComponent("spool"))
            try await log.start()
            let rows = HistoryRows(log: log, statsFolder: folder)
            let (events, sink) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            let observation = rows.stats.observe { _ in sink.yield() }
            rows.stats.prepareItem(for: tenth, at: 0)
            for await _ in events where rows.stats.item(at: 0) != nil { break }
            #expect(rows.stats.item(at: 0)?.files == files, "\(paths)")
            observation.cancel()
            rows.flush()
        }
    }

    /// Seen 2026-11-23 on git/git's 7422200bfa: "4 files +65 −65" (`--no-renames`) where `git show
    /// --stat` says "3 files +2 −2".
    @Test func aRenamedFileCountsAsGitShowStatCountsIt() async throws {
        let repository = try TestRepository(commits: 30)
        defer { repository.remove() }
        let identity = ["-c", "user.name=T", "-c", "user.email=t@example.com"]
        _ = try await Git.run(["mv", "notes.txt", "renamed.txt"], in: repository.path)
        _ = try await Git.run(identity + ["commit", "-q", "-m", "Rename notes"], in: repository.path)
        let head = try await repository.log()[0]
        let stat = try await DiffStats(repository: repository.path).process(head.hash)
        let summary = String(decoding: try await Git.run(["show", "--stat", "--format=", head.hash], in: repository.path), as: UTF8.self)
        #expect(summary.contains("1 file changed"), "\(summary)")
        #expect(stat == DiffStat(files: 1, added: 0, removed: 0))
    }

    @Test func notARepositoryAndAnEmptyRepositoryAreClearAnswers() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("not-a-repo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let spool = folder.appendingPathComponent("spool")
        await #expect(throws: Git.Failure.notARepository(folder.path)) { try await GitLog(repository: folder.path, spoolFolder: spool).check() }

        _ = try await Git.run(["init", "-q"], in: folder.path)
        let empty = GitLog(repository: folder.path, spoolFolder: spool)
        try await empty.check()
        let page = try await empty.page(at: 0, size: 10)
        #expect(page.items.isEmpty && page.cursorAfter == nil)
    }

    @Test(.timeLimit(.minutes(1)))
    func cancellingARunAnswersAtOnceEvenIfAChildHoldsThePipeOpen() async throws {
        let repository = try TestRepository(commits: 1)
        defer { repository.remove() }
        let marker = repository.path + "/hang.pid"
        // An alias whose shell outlives git: the pipes stay open until it ends.
        let run = Task { try await Git.run(["-c", "alias.hang=!echo $$ > hang.pid; exec sleep 1000", "hang"], in: repository.path) }
        while !FileManager.default.fileExists(atPath: marker) { try await Task.sleep(for: .milliseconds(5)) }
        run.cancel()
        await #expect(throws: CancellationError.self) { try await run.value }
        if let pid = Int32(String(decoding: FileManager.default.contents(atPath: marker) ?? Data(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)) {
            kill(pid, SIGKILL)
        }
    }
}

/// A repository made with `git fast-import`: commit n (1 = the root) writes `notes.txt` with n lines
/// and, every fifth commit, a binary `blob.bin`; subjects carry tabs, non-ASCII and a 0x1F byte.
struct TestRepository {
    let path: String

    /// `subjects` and `authors` replace the subjects and author names of the commits they name; `tags` lightweight tags are put
    /// on each commit of `taggedCommits`.
    /// `dates` replace the author dates (raw: `SECONDS ±HHMM`) of the commits they name.
    init(commits: Int, subjects: [Int: String] = [:], authors: [Int: String] = [:], dates: [Int: String] = [:], tags: Int = 0, taggedCommits: [Int] = []) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("history-test-\(UUID().uuidString)").path
        try Self.git(["init", "-q", "-b", "main", path], in: nil)
        var stream = ""
        for n in 1 ... commits {
            let subject = subjects[n] ?? (n % 7 == 0 ? "Tabbed\tsubject \(n) — ünïcode \u{1F} unit" : "Commit \(n)")
            let lines = (0 ..< n % 50).map { "line \($0) of \(n)\n" }.joined()
            stream += "commit refs/heads/main\nmark :\(n)\n"
            stream += "author \(authors[n] ?? "Tést Author") <a@example.com> \(dates[n] ?? "\(1_600_000_000 + n * 3600) +0000")\n"
            stream += "committer C <c@example.com> \(1_600_000_000 + n * 3600) +0000\n"
            stream += "data \(subject.utf8.count)\n\(subject)\n"
            if n > 1 { stream += "from :\(n - 1)\n" }
            stream += "M 100644 inline notes.txt\ndata \(lines.utf8.count)\n\(lines)\n"
            if n % 5 == 0 { stream += "M 100644 inline blob.bin\ndata 4\n\u{0}\u{1}\u{2}\(n % 10)\n" }
        }
        for n in taggedCommits {
            for tag in 0 ..< tags { stream += "reset refs/tags/a-rather-long-tag-name-\(n)-\(tag)\nfrom :\(n)\n\n" }
        }
        try Self.git(["-C", path, "fast-import", "--quiet"], in: Data(stream.utf8))
        try Self.git(["-C", path, "reset", "-q", "--hard", "main"], in: nil)
    }

    /// The log as `git log` itself gives it.
    func log() async throws -> [Commit] {
        GitLog.parse(try await Git.run(["log"] + GitLog.format, in: path))
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// Deletes commit `hash`'s object (the pack unpacked first), as a damaged repository lacks it.
    func loseCommit(_ hash: String) async throws {
        let packs = URL(fileURLWithPath: path).appendingPathComponent(".git/objects/pack")
        for pack in try FileManager.default.contentsOfDirectory(atPath: packs.path) where pack.hasSuffix(".pack") {
            let moved = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).pack")
            try FileManager.default.moveItem(at: packs.appendingPathComponent(pack), to: moved)
            defer { try? FileManager.default.removeItem(at: moved) }
            try Self.git(["-C", path, "unpack-objects", "-q"], in: try Data(contentsOf: moved))
        }
        let object = URL(fileURLWithPath: path).appendingPathComponent(".git/objects/\(hash.prefix(2))/\(hash.dropFirst(2))")
        try FileManager.default.removeItem(at: object)
    }

    private static func git(_ arguments: [String], in input: Data?) throws {
        let process = Process()
        process.executableURL = Git.executable
        process.arguments = arguments
        let stdin = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        try process.run()
        if let input {
            stdin.fileHandleForWriting.write(input)
            try stdin.fileHandleForWriting.close()
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Git.Failure.failed(arguments: arguments, status: process.terminationStatus, message: "") }
    }
}
