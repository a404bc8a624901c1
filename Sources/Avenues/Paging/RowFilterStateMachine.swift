/// The logic of ``FilteredRows`` as a plain value: which rows match the current query, how far the
/// scan got, and which rows to read next. Events in, the next read out; no locks, no tasks.
///
/// Invariants:
/// - `matches` is ascending and holds exactly the rows below `position` that match (in phase two);
///   in phase one (narrowing), exactly the rows below the candidate being checked that match.
/// - Each query has its own `generation`; a read's result counts only for the generation it was
///   planned in (a late page of a cancelled scan changes nothing).
/// - Narrowing: when the new query narrows the old (every row it matches, the old matched), the
///   rows the old scan passed are re-checked only where the old scan matched (`candidates`), then the
///   scan goes on from where the old one stopped.
struct RowFilterStateMachine: Sendable {
    /// A read to make: rows `range` of the source, of which only `candidates` (when not `nil`) need testing.
    struct Read: Sendable, Equatable {
        let generation: UInt64
        let range: Range<Int>
        let candidates: [Int]?
    }

    /// Rows read per step: the most work a cancelled scan can still do.
    let chunk: Int

    private(set) var generation: UInt64 = 0
    private(set) var query: TextQuery?
    /// The matching rows found so far, ascending.
    private(set) var matches: [Int] = []
    /// Phase two: the next row to test (every row below it was tested).
    private(set) var position = 0
    /// Whether the scan reached the end of the source.
    private(set) var finished = false
    /// Phase one: the old query's matches still to re-check, from `nextCandidate` on; rows below
    /// `candidatesEnd` are covered by them.
    private var candidates: [Int] = []
    private var nextCandidate = 0
    private var candidatesEnd = 0

    init(chunk: Int) {
        precondition(chunk >= 1, "RowFilterStateMachine.chunk must be at least 1")
        self.chunk = chunk
    }

    /// Whether a scan has work left.
    var isScanning: Bool { query != nil && (!finished || inPhaseOne) }

    /// Rows tested so far (for progress): every row below this one.
    var scanned: Int { inPhaseOne ? candidatesStart : position }

    private var inPhaseOne: Bool { nextCandidate < candidates.count }
    private var candidatesStart: Int { inPhaseOne ? candidates[nextCandidate] : candidatesEnd }

    /// A new query (`nil`: no filter). Returns whether a scan must (re)start.
    mutating func setQuery(_ new: TextQuery?) -> Bool {
        guard new != query else { return false }
        generation &+= 1
        defer { query = new }
        guard let new else {
            reset()
            return false
        }
        if let old = query, new.narrows(old) {
            // The rows the old scan passed: only its matches (and, if it was narrowing itself, the
            // candidates it had not re-checked yet) can match the new query.
            let unchecked = inPhaseOne ? Array(candidates[nextCandidate...]) : []
            let end = inPhaseOne ? candidatesEnd : position
            candidates = matches + unchecked
            nextCandidate = 0
            candidatesEnd = end
            matches = []
            position = end
            // `finished` stays: after a finished scan the new one only re-checks.
            return true
        }
        reset()
        return true
    }

    private mutating func reset() {
        matches = []
        position = 0
        finished = false
        candidates = []
        nextCandidate = 0
        candidatesEnd = 0
    }

    /// The next read of the scan, or `nil` when it is over (or there is no query).
    func nextRead() -> Read? {
        guard query != nil else { return nil }
        if inPhaseOne {
            let start = candidates[nextCandidate]
            // Saturating: a chunk of Int.max reads to the end of the integers, never past.
            let end = min(candidatesEnd, Saturating.add(start, chunk))
            var index = nextCandidate
            var rows: [Int] = []
            while index < candidates.count, candidates[index] < end {
                rows.append(candidates[index])
                index += 1
            }
            return Read(generation: generation, range: start ..< end, candidates: rows)
        }
        guard !finished else { return nil }
        return Read(generation: generation, range: position ..< Saturating.add(position, chunk), candidates: nil)
    }

    /// The outcome of `read`: the rows of it that matched (ascending), and how many rows the source
    /// gave (fewer than asked: its end). Returns whether it was taken (`false`: an old generation's).
    mutating func take(_ read: Read, matched: [Int], rowsRead: Int) -> Bool {
        guard read.generation == generation, query != nil else { return false }
        matches += matched
        if let rows = read.candidates {
            nextCandidate += rows.count
            if rowsRead < read.range.count {  // the source shrank: what the old scan passed is gone
                candidates = []
                nextCandidate = 0
                position = read.range.lowerBound + rowsRead
                finished = true
            }
            if !inPhaseOne { position = max(position, candidatesEnd) }
            return true
        }
        position = read.range.lowerBound + rowsRead
        if rowsRead < read.range.count { finished = true }
        return true
    }

    /// The source may have rows past its old end (it grew): a finished scan goes on from there.
    mutating func sourceGrew() -> Bool {
        guard query != nil, finished, !inPhaseOne else { return false }
        finished = false
        return true
    }

    /// The index among the matches of source row `row`, if it matches.
    func index(ofRow row: Int) -> Int? {
        var low = 0
        var high = matches.count
        while low < high {
            let middle = (low + high) / 2
            if matches[middle] < row { low = middle + 1 } else { high = middle }
        }
        return low < matches.count && matches[low] == row ? low : nil
    }
}
