import Avenues
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// How `--transport-only` writes and hands over each file.
struct TransportOnlyOptions {
    /// Each body into a file with no name, linked into place when whole (`O_TMPFILE` + `linkat`, as
    /// AsyncMedia commits on Linux) instead of opened under its name (as `curl -o`).
    var atomic = false
    /// Each file's path handed to a task that reads them as they end (as `files(for:)`'s reader).
    var answers = false
    /// Each file opened ahead by a task on the pool, in batches, instead of at its head on the
    /// transport's thread (`--atomic` implied): what a design that prepares on the pool and ends
    /// each download on the transport's thread would leave the transport's thread.
    var prepared = false
}

/// The transport alone, fed as curl feeds itself: `concurrency` requests in flight, the next one
/// started from the end of the last, each body written to its own file as it arrives (open at the
/// head, write, close at the end) on the transport's thread. No cache, no de-duplication, no task
/// per file: what the keep-alive client costs beside curl, and with `options` what a cache's atomic
/// commit, a reader's wake per file, and files opened ahead on the pool change (`keepalive-bench.py`
/// prints all four). Returns how many failed.
func transportOnly(
    _ urls: [URL], through transport: any DownloadTransport, into folder: String, concurrency: Int, options: TransportOnlyOptions
) async -> Int {
    let (stream, answers) = AsyncStream.makeStream(of: String.self)
    let reader: Task<Void, Never>? = options.answers ? Task.detached {
        for await _ in stream {}
    } : nil
    let prepared = options.prepared ? PreparedFiles(folder: folder) : nil
    let failures = await withCheckedContinuation { (done: CheckedContinuation<Int, Never>) in
        let queue = TransportQueue(urls: urls, transport: transport, folder: folder, options: options, answers: options.answers ? answers : nil, prepared: prepared, done: done)
        for _ in 0 ..< min(concurrency, urls.count) { queue.startNext() }
        if urls.isEmpty { done.resume(returning: 0) }
    }
    answers.finish()
    await reader?.value
    await prepared?.finish()
    return failures
}

#if os(Linux)
/// A file with no name in `folder` (`O_TMPFILE`), to be linked into place when whole; -1 on failure.
private func openUnnamed(in folder: String) -> Int32 {
    open(folder, 0o20_000_000 | O_DIRECTORY | O_RDWR | O_CLOEXEC, 0o644)
}
#endif

/// Files with no name opened ahead by a task on the pool: a batch up to `high` whenever fewer than
/// `low` are left, so the pool is woken about once per 24 files instead of once per file. A file
/// asked for when none is ready is opened by the asker.
private final class PreparedFiles: Sendable {
    struct State {
        var ready: [Int32] = []
        var refilling = false
    }
    final class Box: Sendable { let state = Mutex(State()) }
    let folder: String
    let box = Box()
    let signals: AsyncStream<Void>.Continuation
    let filler: Task<Void, Never>
    static let low = 8
    static let high = 32

    init(folder: String) {
        self.folder = folder
        let (stream, signals) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.signals = signals
        let box = box
        filler = Task.detached {
            for await _ in stream {
                var opened: [Int32] = []
                let wanted = Self.high - box.state.withLock { $0.ready.count }
                for _ in 0 ..< max(0, wanted) {
                    #if os(Linux)
                    let descriptor = openUnnamed(in: folder)
                    if descriptor >= 0 { opened.append(descriptor) }
                    #endif
                }
                box.state.withLock {
                    $0.ready.append(contentsOf: opened)
                    $0.refilling = false
                }
            }
        }
        box.state.withLock { $0.refilling = true }
        signals.yield()
    }

    /// A prepared file, or -1 when none is ready.
    func take() -> Int32 {
        let (descriptor, signal) = box.state.withLock { state -> (Int32, Bool) in
            let descriptor = state.ready.popLast() ?? -1
            guard state.ready.count < Self.low, !state.refilling else { return (descriptor, false) }
            state.refilling = true
            return (descriptor, true)
        }
        if signal { signals.yield() }
        return descriptor
    }

    /// Closes the files left over, once the filler has stopped.
    func finish() async {
        signals.finish()
        await filler.value
        for descriptor in box.state.withLock({ $0.ready }) { close(descriptor) }
    }
}

/// The URLs not yet started, and what ended.
private final class TransportQueue: Sendable {
    struct State {
        var next = 0
        var ended = 0
        var failures = 0
    }
    let urls: [URL]
    let transport: any DownloadTransport
    let folder: String
    let options: TransportOnlyOptions
    let answers: AsyncStream<String>.Continuation?
    let prepared: PreparedFiles?
    let done: CheckedContinuation<Int, Never>
    let state = Mutex(State())

    init(urls: [URL], transport: any DownloadTransport, folder: String, options: TransportOnlyOptions,
         answers: AsyncStream<String>.Continuation?, prepared: PreparedFiles?, done: CheckedContinuation<Int, Never>) {
        (self.urls, self.transport, self.folder, self.options, self.answers, self.prepared, self.done) =
            (urls, transport, folder, options, answers, prepared, done)
    }

    func startNext() {
        let index = state.withLock { state -> Int? in
            guard state.next < urls.count else { return nil }
            defer { state.next += 1 }
            return state.next
        }
        guard let index else { return }
        let sink = FileSink(path: folder + "/f\(index)", queue: self)
        _ = transport.start(DownloadRequest(url: urls[index], headers: [], limits: .default), into: sink)
    }

    func ended(_ path: String, failed: Bool) {
        if !failed { answers?.yield(path) }
        let (finished, failures) = state.withLock { state in
            state.ended += 1
            if failed { state.failures += 1 }
            return (state.ended == urls.count, state.failures)
        }
        if finished { done.resume(returning: failures) } else { startNext() }
    }
}

/// One body into one file, on the transport's thread.
// Safe: a transport calls a sink's methods one at a time, in order (DownloadSink's contract).
private final class FileSink: DownloadSink, @unchecked Sendable {
    let path: String
    let queue: TransportQueue
    var descriptor: Int32 = -1
    var failed = false

    init(path: String, queue: TransportQueue) {
        (self.path, self.queue) = (path, queue)
    }

    func head(status: Int, fields: [HTTPField]) -> Bool {
        guard status == 200 else {
            failed = true
            return false
        }
        #if os(Linux)
        if let prepared = queue.prepared {
            descriptor = prepared.take()
            if descriptor < 0 { descriptor = openUnnamed(in: queue.folder) }
            return descriptor >= 0
        }
        if queue.options.atomic {
            descriptor = openUnnamed(in: queue.folder)
            return descriptor >= 0
        }
        #endif
        descriptor = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o644)
        return descriptor >= 0
    }

    func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var rest = bytes
        while !rest.isEmpty {
            let written = write(descriptor, rest.baseAddress, rest.count)
            guard written > 0 else { return false }
            rest = UnsafeRawBufferPointer(rebasing: rest[written...])
        }
        return true
    }

    func end(_ error: (any Error)?) {
        var failed = failed || error != nil || descriptor < 0
        #if os(Linux)
        if queue.options.atomic || queue.prepared != nil, !failed, linkat(descriptor, "", AT_FDCWD, path, 0x1000) != 0 { failed = true }  // AT_EMPTY_PATH
        #endif
        if descriptor >= 0 { close(descriptor) }
        queue.ended(path, failed: failed)
    }
}
