import Testing
@testable import Avenues
import AvenuesTestSupport

@Suite("Row filter state machine")
struct RowFilterStateMachineTests {
    @Test func plansAScanThenANarrowingReCheckThenGoesOn() {
        var machine = RowFilterStateMachine(chunk: 10)
        func set(_ query: TextQuery?) -> Bool { machine.setQuery(query) }
        func take(_ read: RowFilterStateMachine.Read?, _ matched: [Int], _ rows: Int) -> Bool {
            guard let read else { return false }
            return machine.take(read, matched: matched, rowsRead: rows)
        }
        #expect(machine.nextRead() == nil)
        #expect(set(TextQuery("ab")))
        var read = machine.nextRead()
        #expect(read?.range == 0 ..< 10 && read?.candidates == nil)
        #expect(take(read, [2, 7], 10))
        read = machine.nextRead()
        #expect(read?.range == 10 ..< 20)
        #expect(take(read, [15], 10))
        #expect(machine.scanned == 20 && machine.isScanning)

        // Narrowing: the 20 rows passed are re-checked only at 2, 7 (one read) and 15, then on from 20.
        let old = machine.nextRead()!
        #expect(set(TextQuery("abc")))
        #expect(!take(old, [25], 10))  // the old generation's read counts for nothing
        read = machine.nextRead()
        #expect(read?.range == 2 ..< 12 && read?.candidates == [2, 7])
        #expect(take(read, [7], 10))
        read = machine.nextRead()
        #expect(read?.range == 15 ..< 20 && read?.candidates == [15])
        #expect(take(read, [], 5))
        read = machine.nextRead()
        #expect(read?.range == 20 ..< 30 && read?.candidates == nil)
        #expect(take(read, [21], 4))  // a short read: the end
        #expect(!machine.isScanning && machine.matches == [7, 21] && machine.nextRead() == nil)
        #expect(machine.index(ofRow: 21) == 1 && machine.index(ofRow: 20) == nil)

        // Narrowing a finished scan re-checks and is then finished again, without reading on.
        #expect(set(TextQuery("abcd")))
        #expect(machine.isScanning)
        read = machine.nextRead()
        #expect(read?.range == 7 ..< 17 && read?.candidates == [7])
        #expect(take(read, [], 10))
        read = machine.nextRead()
        #expect(read?.candidates == [21])
        #expect(take(read, [21], 3))
        #expect(!machine.isScanning && machine.matches == [21])

        // Widening starts over; no query stops.
        #expect(set(TextQuery("a")))
        #expect(machine.nextRead()?.range == 0 ..< 10 && machine.matches.isEmpty)
        #expect(!set(nil) && machine.nextRead() == nil)
    }

    func accepts(_ value: Bool, sourceLocation: SourceLocation = #_sourceLocation) { #expect(value, sourceLocation: sourceLocation) }
    func refuses(_ value: Bool, sourceLocation: SourceLocation = #_sourceLocation) { #expect(!value, sourceLocation: sourceLocation) }

    /// A read of `rows` (the first `length` exist) as `FilteredRows` makes it: the rows the source
    /// gives, and those of them the query matches.
    static func serve(_ read: RowFilterStateMachine.Read, _ rows: [String], length: Int, _ query: TextQuery) -> (matched: [Int], rowsRead: Int) {
        let lower = min(read.range.lowerBound, length)
        let given = lower ..< max(lower, min(read.range.upperBound, length))
        let tested = read.candidates.map { $0.filter(given.contains) } ?? Array(given)
        return (tested.filter { query.matches(rows[$0]) }, given.count)
    }

    /// Takes every read the scan plans until it is over, served from the first `length` rows.
    func scanToTheEnd(_ machine: inout RowFilterStateMachine, _ rows: [String], length: Int, _ query: TextQuery, sourceLocation: SourceLocation = #_sourceLocation) {
        while let read = machine.nextRead() {
            let served = Self.serve(read, rows, length: length, query)
            accepts(machine.take(read, matched: served.matched, rowsRead: served.rowsRead), sourceLocation: sourceLocation)
        }
    }

    /// ``scanToTheEnd(_:_:length:_:sourceLocation:)``, then: the matches are the model's over all
    /// `length` rows, every one of them scanned.
    func readsOnToTheEnd(_ machine: inout RowFilterStateMachine, _ rows: [String], length: Int, _ query: TextQuery, sourceLocation: SourceLocation = #_sourceLocation) {
        scanToTheEnd(&machine, rows, length: length, query, sourceLocation: sourceLocation)
        #expect(machine.matches == FilteredRowsTests.model(Array(rows.prefix(length)), query), sourceLocation: sourceLocation)
        #expect(machine.scanned == length, sourceLocation: sourceLocation)
    }

    /// A machine that scanned the first `length` rows for "a" to the end, then was given `query`.
    func narrowed(to query: TextQuery, afterScanning rows: [String], length: Int, chunk: Int) -> RowFilterStateMachine {
        var machine = RowFilterStateMachine(chunk: chunk)
        accepts(machine.setQuery(TextQuery("a")))
        scanToTheEnd(&machine, rows, length: length, TextQuery("a"))
        #expect(!machine.isScanning)
        accepts(machine.setQuery(query))
        return machine
    }

    /// The source grew while a read was out; the read came back short, at the end it saw. The scan
    /// must read on: the growth is past that end, and nobody will say it again.
    @Test func growthWhileAReadIsOutIsNotLostWhenTheReadComesBackShort() {
        let rows = FilteredRowsTests.words(50, seed: 2)
        var machine = RowFilterStateMachine(chunk: 16)
        let query = TextQuery("ab")
        accepts(machine.setQuery(query))
        var length = 10
        guard let read = machine.nextRead() else { Issue.record("no read"); return }
        let served = Self.serve(read, rows, length: length, query)  // 10 of 16: the end, as it was
        length = 50
        refuses(machine.sourceGrew())  // the scan is running: nothing to start
        accepts(machine.take(read, matched: served.matched, rowsRead: served.rowsRead))
        #expect(machine.isScanning, "the rows past 10 were never read")
        readsOnToTheEnd(&machine, rows, length: length, query)
    }

    /// The source grew while a narrowing query re-checked the last one's matches, after a scan
    /// that had reached the end: once the re-check is over, the scan reads on past the old end.
    @Test func growthDuringANarrowingReCheckIsNotLost() {
        let rows = FilteredRowsTests.words(60, seed: 4)
        let narrower = TextQuery("ab")
        var machine = narrowed(to: narrower, afterScanning: rows, length: 20, chunk: 8)
        #expect(machine.nextRead()?.candidates != nil)  // re-checking
        let length = 60
        refuses(machine.sourceGrew())  // the re-check runs: nothing to start, but it must read on after
        readsOnToTheEnd(&machine, rows, length: length, narrower)
    }

    /// The source shrank under a narrowing re-check (a log truncated): the scan ends at the end the
    /// read found, not at the end the old scan had reached; growing again, it reads on from there.
    @Test func aSourceThatShrankUnderAReCheckEndsWhereItsReadEnded() {
        let rows = FilteredRowsTests.words(40, seed: 6)
        let narrower = TextQuery("ab")
        var machine = narrowed(to: narrower, afterScanning: rows, length: 40, chunk: 40)
        var length = 5
        guard let read = machine.nextRead(), let first = read.candidates?.first, first < 5 else {
            Issue.record("the words changed: the test needs a match of \"a\" below row 5"); return
        }
        let served = Self.serve(read, rows, length: length, narrower)
        accepts(machine.take(read, matched: served.matched, rowsRead: served.rowsRead))
        #expect(!machine.isScanning && machine.scanned == 5)
        length = 40
        accepts(machine.sourceGrew())
        readsOnToTheEnd(&machine, rows, length: length, narrower)
    }

    /// A read taken twice (a scan that was replaced, a caller's slip) counts once.
    @Test func aReadTakenTwiceCountsOnce() {
        let rows = FilteredRowsTests.words(30, seed: 8)
        var machine = RowFilterStateMachine(chunk: 10)
        let query = TextQuery("a")
        accepts(machine.setQuery(query))
        guard let read = machine.nextRead() else { Issue.record("no read"); return }
        let served = Self.serve(read, rows, length: 30, query)
        accepts(machine.take(read, matched: served.matched, rowsRead: served.rowsRead))
        refuses(machine.take(read, matched: served.matched, rowsRead: served.rowsRead))
        #expect(machine.scanned == 10 && machine.matches == served.matched)
    }

    /// Seeded random events — queries (chains that narrow among them, and none), reads made and
    /// taken later (the source may grow in between), reads of an old query taken late, reads
    /// taken twice, the source growing — checked after each against a model: the matches are the
    /// rows below `scanned` that match, and a scan that is over has read to the source's end.
    @Test(arguments: 1 ... 60 as ClosedRange<UInt64>)
    func randomEventsKeepTheMatchesTheModels(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        func below(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }
        let rows = FilteredRowsTests.words(500, seed: seed)
        let texts = ["a", "ab", "abc", "abd", "b", "bu", "build", "f", "fi", "fix", "Fix", "c", "ca", "caf", "café", "CAFÉ", "d", "do", "docs", "1", "12", "t", "te"]
        let queries = texts.map { TextQuery($0) }
        var machine = RowFilterStateMachine(chunk: 1 + below(48))
        var length = below(120)
        /// Reads made and not yet taken, with what the source gave at the time.
        var out: [(read: RowFilterStateMachine.Read, query: TextQuery, matched: [Int], rowsRead: Int)] = []
        var history: [String] = []

        func check(_ step: String) -> Bool {
            guard let query = machine.query else {
                if !machine.matches.isEmpty || machine.isScanning || machine.nextRead() != nil {
                    Issue.record("seed \(seed), \(step): no query, yet \(machine.matches.count) matches or a scan")
                    return false
                }
                return true
            }
            let scanned = machine.scanned
            guard scanned <= length else {
                Issue.record("seed \(seed), \(step): scanned \(scanned) of \(length) rows\n\(history.suffix(10).joined(separator: "\n"))")
                return false
            }
            let expected = (0 ..< scanned).filter { query.matches(rows[$0]) }
            guard machine.matches == expected else {
                Issue.record("seed \(seed), \(step): \(query) matches \(machine.matches) below \(scanned), the model \(expected)\n\(history.suffix(10).joined(separator: "\n"))")
                return false
            }
            if !machine.isScanning, scanned != length {
                Issue.record("seed \(seed), \(step): \(query)'s scan is over at \(scanned) of \(length) rows\n\(history.suffix(10).joined(separator: "\n"))")
                return false
            }
            return true
        }

        func take(_ index: Int, keep: Bool) -> Bool {
            let sent = out[index]
            if !keep { out.remove(at: index) }
            let current = machine.nextRead().map { $0.generation == sent.read.generation && $0.range == sent.read.range && $0.candidates == sent.read.candidates } ?? false
            let before = (machine.matches, machine.scanned, machine.isScanning)
            let taken = machine.take(sent.read, matched: sent.matched, rowsRead: sent.rowsRead)
            history.append("take \(sent.read.range) \(sent.read.candidates.map { "\($0.count) candidates" } ?? "") gen \(sent.read.generation) rows \(sent.rowsRead): \(taken)")
            if taken != current {
                Issue.record("seed \(seed): a read \(current ? "that was the next" : "that was not the next") was \(taken ? "taken" : "refused")\n\(history.suffix(10).joined(separator: "\n"))")
                return false
            }
            if !taken, before != (machine.matches, machine.scanned, machine.isScanning) {
                Issue.record("seed \(seed): a refused read changed the scan")
                return false
            }
            return true
        }

        for step in 0 ..< 400 {
            switch below(10) {
            case 0, 1:
                // A new query: half the time one that narrows the current (typing on).
                let narrowing = machine.query.map { current in queries.filter { $0.narrows(current) && $0 != current } } ?? []
                let next: TextQuery? = below(10) == 0 ? nil : (below(2) == 0 && !narrowing.isEmpty ? narrowing[below(narrowing.count)] : queries[below(queries.count)])
                _ = machine.setQuery(next)
                history.append("query \(next.map(\.text) ?? "nil")")
            case 2, 3, 4:
                // The scan reads its next chunk (only one read of a query is out at a time, as in
                // `FilteredRows`, whose current scan reads one chunk at a time).
                guard let read = machine.nextRead(), let query = machine.query, !out.contains(where: { $0.read.generation == read.generation }) else { break }
                let served = Self.serve(read, rows, length: length, query)
                out.append((read, query, served.matched, served.rowsRead))
                history.append("read \(read.range) of \(length)")
            case 5, 6, 7:
                guard !out.isEmpty, take(below(out.count), keep: below(8) == 0) else { break }
            case 8:
                let grown = min(rows.count, length + below(40))
                history.append("grow \(length) → \(grown)")
                length = grown
                _ = machine.sourceGrew()
            default:
                // Nothing left out: the current read made and taken at once.
                guard let read = machine.nextRead(), let query = machine.query else { break }
                let served = Self.serve(read, rows, length: length, query)
                out.append((read, query, served.matched, served.rowsRead))
                guard take(out.count - 1, keep: false) else { return }
            }
            if !check("step \(step)") { return }
        }
        // Drain: what is out comes back, then the scan runs to its end.
        while !out.isEmpty {
            guard take(0, keep: false), check("draining") else { return }
        }
        var reads = 0
        while let read = machine.nextRead(), let query = machine.query, reads < 10_000 {
            let served = Self.serve(read, rows, length: length, query)
            out.append((read, query, served.matched, served.rowsRead))
            guard take(0, keep: false), check("draining") else { return }
            reads += 1
        }
        #expect(!machine.isScanning, "seed \(seed): the scan never ended")
        if let query = machine.query {
            #expect(machine.matches == (0 ..< length).filter { query.matches(rows[$0]) }, "seed \(seed)")
        }
    }
}
