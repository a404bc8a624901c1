import Avenues

/// Streams every row of a table in order, computing up to `ahead` rows at once: a row is handed to
/// `emit` as soon as it and every row before it are done, and released right after, so memory stays
/// bounded whatever the number of rows.
///
/// It drives the avenue with a `RowPrefetcher` whose visible window is the next row to print, the
/// same mechanism a screen uses.
public func streamRowsInOrder(
    of table: FileTable,
    ahead: Int,
    emit: (Int, RowContent) -> Void
) async {
    let changes = table.avenue.subscribe()  // subscribed before anything is prepared, so no change is missed
    var iterator = changes.makeAsyncIterator()
    let prefetcher = RowPrefetcher(avenue: table.avenue, ahead: max(0, ahead - 1), behind: 0) { table.key($0) }
    var next = 0
    while next < table.entries.count {
        prefetcher.show(next..<next + 1)
        let content = table.content(at: next)
        if content.isSettled {
            emit(next, content)
            next += 1
            continue
        }
        // Wait for any change, then look again.
        guard await iterator.next() != nil else { return }
    }
    prefetcher.stop()
}

/// The reference the ordered stream is checked against: one row after another, no avenue, no cache.
public func computeRowsSequentially(of entries: [FileEntry], emit: (Int, RowContent) -> Void) async {
    let summarizer = FileSummarizer()
    for (index, entry) in entries.enumerated() {
        if let problem = entry.problem {
            emit(index, .failed(problem))
            continue
        }
        if entry.isFolder {
            emit(index, .folder)
            continue
        }
        do {
            emit(index, .loaded(try await summarizer.process(entry.ref)))
        } catch {
            emit(index, .failed(String(describing: error)))
        }
    }
}
