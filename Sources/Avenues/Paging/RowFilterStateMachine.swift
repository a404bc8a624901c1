/// The logic of ``FilteredRows`` as a plain value: which rows match the current query, how far the
/// scan got, and which rows to read next. Events in, the next read out; no locks, no tasks.
///
/// Invariants:
/// - `matches` is ascending and holds exactly the rows below `position` that match (in phase two);
///   in phase one (narrowing), exactly the rows below the candidate being checked that match.
/// - Each query has its own `generation`; a read's result counts only for the generation it was
///   planned in (a late page of a cancelled scan changes nothing), and only once: a read is taken
///   only while it is still the next read.
/// - A scan is over only when a read came back short (the source's end) and the source did not
///   grow after that read was planned: a growth said while a read is out is never lost.
/// - Narrowing: when the new query narrows the old (every row it matches, the old matched), the
///   rows the old scan passed are re-checked only where the old scan matched (`candidates`), then the
///   scan goes on from where the old one stopped.
struct RowFilterStateMachine: Sendable {
    /// A read to make: rows `range` of the source, of which only `candidates` (when not `nil`) need testing.
    struct Read: Sendable, Equatable {
        let generation: UInt64
        /// The growths said before this read was planned: a short read planned before the last one
        /// found an end that may have moved.
        let growth: UInt64
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
    /// The times ``sourceGrew()`` was said.
    private var growth: UInt64 = 0

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
            return Read(generation: generation, growth: growth, range: start ..< end, candidates: rows)
        }
        guard !finished else { return nil }
        return Read(generation: generation, growth: growth, range: position ..< Saturating.add(position, chunk), candidates: nil)
    }

    /// Whether `read` is the read planned now (and not one of an old query, or one taken already).
    private func isNext(_ read: Read) -> Bool {
        guard query != nil, read.generation == generation else { return false }
        if read.candidates != nil { return inPhaseOne && read.range.lowerBound == candidates[nextCandidate] }
        return !inPhaseOne && !finished && read.range.lowerBound == position
    }

    /// The outcome of `read`: the rows of it that matched (ascending), and how many rows the source
    /// gave (fewer than asked: its end). Returns whether it was taken (`false`: an old generation's,
    /// or one taken already).
    mutating func take(_ read: Read, matched: [Int], rowsRead: Int) -> Bool {
        guard isNext(read) else { return false }
        matches += matched
        // A source that gave more rows than asked is taken at the rows asked (the caller tests no more).
        let rowsRead = min(max(0, rowsRead), read.range.count)
        // Short: the source's end, unless it grew after the read was planned.
        let end = rowsRead < read.range.count && read.growth == growth
        if let rows = read.candidates {
            nextCandidate += rows.count
            if rowsRead < read.range.count {
                // The source shrank: what the old scan passed past the rows given is gone. The
                // scan is at the end the read found (not the old scan's), and reads on from there
                // if the source grew since.
                candidates = []
                nextCandidate = 0
                candidatesEnd = 0
                position = read.range.lowerBound + rowsRead
                finished = end
            }
            return true
        }
        position = read.range.lowerBound + rowsRead
        if end { finished = true }
        return true
    }

    /// The source may have rows past the end a scan found (it grew): a finished scan goes on from
    /// there, a re-check goes on past it once done, and a read out now that comes back short does
    /// not end the scan. Returns whether the scan had ended (and must be started again).
    mutating func sourceGrew() -> Bool {
        guard query != nil else { return false }
        let wasOver = !isScanning
        growth &+= 1
        finished = false
        return wasOver
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
