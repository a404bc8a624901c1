import Foundation

/// One request of a download, as the sink a ``DownloadTransport`` delivers into: it asks
/// ``TransferStateMachine`` what the head means, decodes and writes the body on the transport's own
/// thread (so the network goes no faster than the disk and nothing piles up in memory), and resumes
/// the waiting run.
///
/// A failure — a limit, the watchdog, a cancel — resumes the run **at once**, so its download slot
/// is free whatever the transport is doing, and tells the transport to stop; the file is closed
/// when the transport ends the sink (it always does).
final class Transfer: DownloadSink {
    let url: URL
    let limits: DownloadLimits
    private let report: @Sendable (DownloadProgress) -> Void
    /// Called on the transport's thread when a body starts, before any of it is written.
    private let bodyStarts: @Sendable (TransferStateMachine.BodyPlan) -> Void
    private let state: Locked<State>
    private let writer: Writer
    /// The gate whose slot this transfer waits for and then holds, with its ticket.
    private let slot: (gate: TransferGate, ticket: UInt64)?

    /// Progress is reported when a body starts, then after every this many bytes or, on a slow
    /// download, after every ``reportInterval`` in which bytes came: never per chunk, never silent
    /// for long.
    static let reportEvery: Int64 = 256 * 1024
    /// The longest a download that moves goes without a progress report.
    static let reportInterval: Duration = .milliseconds(100)

    private struct State {
        var machine: TransferStateMachine
        /// When the transfer began to move (`nil` while it waits for a slot): its time limits count from here.
        var started: ContinuousClock.Instant?
        var lastActivity: ContinuousClock.Instant
        /// The gate's slot (or place in its line) was given back.
        var slotReleased = false
        var lastReported: Int64 = 0
        /// When progress was last reported: bytes that came after ``Transfer/reportInterval`` are reported.
        var lastReportedAt: ContinuousClock.Instant?
        /// Unsafe, not checked (a checked one is an allocation per download): `resumed` makes every
        /// resume the only one, under this lock.
        var continuation: UnsafeContinuation<TransferStateMachine.Outcome, any Error>?
        var resumed = false
        /// The transport ended the sink.
        var ended = false
        var handle: DownloadHandle?
        /// The plan of the body read, kept after the end (its validators are recorded).
        var plan: TransferStateMachine.BodyPlan?
    }

    /// The file a transfer writes: its open descriptor (positioned by the transfer) and how many
    /// bytes it already holds (a resume continues after them).
    struct FileTarget: Sendable {
        let path: String
        /// One owner of it is the transfer's: released when the transport ends it.
        let descriptor: SharedDescriptor
        let existing: Int64
    }

    init(
        request: TransferStateMachine.Request,
        file: FileTarget,
        limits: DownloadLimits,
        writeBytes: @escaping @Sendable (Int32, UnsafeRawBufferPointer, String) throws -> Void,
        bodyStarts: @escaping @Sendable (TransferStateMachine.BodyPlan) -> Void = { _ in },
        report: @escaping @Sendable (DownloadProgress) -> Void,
        slot: (gate: TransferGate, ticket: UInt64)? = nil
    ) {
        url = request.url
        self.limits = limits
        self.report = report
        self.bodyStarts = bodyStarts
        self.slot = slot
        let now = ContinuousClock.now
        // Without a gate it moves at once; with one, when ``moved()`` says so.
        state = Locked(State(machine: TransferStateMachine(request: request), started: slot == nil ? now : nil, lastActivity: now))
        writer = Writer(file: file, writeBytes: writeBytes)
    }

    /// The transfer got its slot and is handed to the transport: its time limits start now.
    func moved() {
        state.withLock { state in
            let now = ContinuousClock.now
            state.started = now
            state.lastActivity = now
        }
    }

    /// Gives the gate's slot back (or the place in its line) the first time it is called; closes the
    /// file of a transfer that never moved, since no transport will end it.
    private func releaseSlot() {
        guard let slot, state.withLock({ state in
            defer { state.slotReleased = true }
            return !state.slotReleased
        }) else { return }
        if slot.gate.leave(slot.ticket) { writer.close() }
    }

    /// The transport's handle: cancelled at once if the transfer already failed.
    func attach(_ handle: DownloadHandle) {
        let stopNow = state.withLock { state -> Bool in
            if state.machine.decided != nil { return true }
            state.handle = handle
            return false
        }
        if stopNow { handle.cancel() }
    }

    /// The plan of the body that was read, once a head said to read one.
    var plan: TransferStateMachine.BodyPlan? { state.withLock { $0.plan } }

    // MARK: DownloadSink

    func head(status: Int, fields: [HTTPField]) -> Bool {
        let decision = state.withLock { state -> TransferStateMachine.HeadDecision in
            state.lastActivity = .now
            let decision = state.machine.head(status: status, fields: fields)
            if case .readBody(let plan) = decision { state.plan = plan }
            return decision
        }
        switch decision {
        case .readBody(let plan):
            do {
                try writer.start(plan)
            } catch {
                fail(AsyncMediaError.cannotStore(url, reason: DiskStorageError(converting: error, path: writer.path)))
                return false
            }
            bodyStarts(plan)
            // The first report: the size (a progress bar can be drawn) and what a resume kept.
            report(state.withLock { state in
                state.lastReported = state.machine.fileSize
                state.lastReportedAt = state.lastActivity
                return DownloadProgress(received: state.lastReported, expected: plan.expectedTotal, isComplete: false)
            })
            return true
        case .notModified, .redirect:
            return false  // decided: the run is resumed when the transport ends the sink
        case .failed(let error):
            fail(error)
            return false
        }
    }

    func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        enum Gate { case over, stop(any Error), go }
        let gate = state.withLock { state -> Gate in
            guard state.machine.decided == nil else { return .over }
            state.lastActivity = .now
            if let error = state.machine.received(raw: bytes.count) { return .stop(error) }
            return .go
        }
        switch gate {
        case .over: return false
        case .stop(let error):
            fail(error)
            return false
        case .go: break
        }
        do {
            try writer.write(bytes) { count in state.withLock { $0.machine.willWrite(count) } }
        } catch let error as AsyncMediaError {
            fail(error)
            return false
        } catch let error as ContentDecoder.Failure {
            fail(AsyncMediaError.malformedResponse(url, reason: error.description))
            return false
        } catch {
            fail(AsyncMediaError.cannotStore(url, reason: DiskStorageError(converting: error, path: writer.path)))
            return false
        }
        let progress = state.withLock { state -> DownloadProgress? in
            let size = state.machine.fileSize
            guard Self.isReportDue(
                received: size - state.lastReported, since: state.lastReportedAt.map { state.lastActivity - $0 }
            ) else { return nil }
            state.lastReported = size
            state.lastReportedAt = state.lastActivity
            return DownloadProgress(received: size, expected: state.plan?.expectedTotal, isComplete: false)
        }
        if let progress { report(progress) }
        return true
    }

    /// Whether progress is reported after `received` bytes came since the last report, `since` ago
    /// (`nil`: none was).
    static func isReportDue(received: Int64, since: Duration?) -> Bool {
        guard received > 0 else { return false }
        return received >= reportEvery || since.map { $0 >= reportInterval } ?? true
    }

    func end(_ error: (any Error)?) {
        var decodingError: (any Error)?
        do {
            try writer.finish()
        } catch let failure as ContentDecoder.Failure {
            decodingError = failure == .incomplete
                ? AsyncMediaError.incompleteBody(received: state.withLock { $0.machine.fileSize }, expected: nil, url: url)
                : AsyncMediaError.malformedResponse(url, reason: failure.description)
        } catch {
            decodingError = AsyncMediaError.malformedResponse(url, reason: "\(error)")
        }
        writer.close()
        releaseSlot()
        let transportError = error.map(Self.classify)
        let (continuation, result) = state.withLock { state in
            let result = state.machine.end(transportError: transportError, decodingError: decodingError)
            state.ended = true
            state.handle = nil
            let continuation = state.resumed ? nil : state.continuation
            if continuation != nil { state.resumed = true }
            state.continuation = nil
            return (continuation, result)
        }
        continuation?.resume(with: result)
    }

    /// Fails the transfer now (a limit, a disk error, a cancel): resumes the run at once and stops
    /// the transport.
    func fail(_ error: any Error) {
        let (continuation, handle) = state.withLock { state -> (UnsafeContinuation<TransferStateMachine.Outcome, any Error>?, DownloadHandle?) in
            guard state.machine.decided == nil else { return (nil, nil) }
            state.machine.fail(error)
            defer {
                state.handle = nil
                state.continuation = nil
            }
            let continuation = state.resumed ? nil : state.continuation
            if continuation != nil { state.resumed = true }
            return (continuation, state.handle)
        }
        handle?.cancel()
        releaseSlot()
        continuation?.resume(throwing: error)
    }

    /// The slot came, but the run was withdrawn meanwhile: no transport is started, so the file is
    /// closed here, the slot given back and the run resumed with `CancellationError`.
    func withdrawnAtItsStart() {
        writer.close()
        fail(CancellationError())
    }

    /// A transport's error, as AsyncMedia reports it: a cancel is `CancellationError`.
    static func classify(_ error: any Error) -> any Error {
        if (error as? URLError)?.code == .cancelled { return CancellationError() }
        return error
    }

    /// A `Retry-After` value — seconds, or an HTTP date — as a delay from now, at most a day.
    static func delay(retryAfter value: String, now: Date = Date()) -> Duration? {
        let text = value.trimmingSpaces()
        let longest = Duration.seconds(86_400)
        if let seconds = ResponseHead.number(text) { return min(.seconds(seconds), longest) }
        // Not `DateFormatter`: it traps on some text a server can send (``HTTPDate``).
        guard let date = HTTPDate.parse(text, now: now) else { return nil }
        return min(Saturating.duration(seconds: max(0, date.timeIntervalSince(now))), longest)
    }

    // MARK: For the run

    /// Waits for the end of the transfer, enforcing the time limits.
    /// Cancelling the calling task fails the transfer with `CancellationError` and stops it.
    func wait() async throws -> TransferStateMachine.Outcome {
        TransferWatch.shared.watch(self)
        defer { TransferWatch.shared.unwatch(self) }
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                let decided = state.withLock { state -> Result<TransferStateMachine.Outcome, any Error>? in
                    // Decided before the run waited (a fast transfer, or a failure): answer at once.
                    // A decision is final once the transport ended the sink, or when it failed.
                    if let decided = state.machine.decided, state.ended || decided.isFailure {
                        state.resumed = true
                        return decided
                    }
                    state.continuation = continuation
                    return nil
                }
                if let decided { continuation.resume(with: decided) }
            }
        } onCancel: {
            fail(CancellationError())
        }
    }

    /// Fails the transfer if no byte arrived for `idleTimeout` or it ran past `totalTimeout` by
    /// `now`; returns when to look again, or `nil` once it is decided (``TransferWatch`` asks).
    func checkLimits(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        let (started, lastActivity, done) = state.withLock { ($0.started, $0.lastActivity, $0.machine.decided != nil) }
        if done { return nil }
        // Waiting for a slot counts against no limit; looked at again after an idle timeout's time.
        guard let started else { return now + limits.idleTimeout }
        if let total = limits.totalTimeout, now - started >= total {
            fail(AsyncMediaError.tookTooLong(url, limit: total))
            return nil
        }
        if now - lastActivity >= limits.idleTimeout {
            fail(URLError(.timedOut, userInfo: [NSURLErrorFailingURLErrorKey: url]))
            return nil
        }
        var wake = lastActivity + limits.idleTimeout
        if let total = limits.totalTimeout { wake = min(wake, started + total) }
        return wake
    }
}

extension Result {
    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}

/// The file side of a transfer: positions the file, decodes the body and writes it.
///
/// A transport calls a sink from one thread at a time (DownloadSink's contract), so its lock is
/// never contended by ours; it is there for a transport of one's own that breaks the rule: held
/// through each write, it keeps a body piece from being written into a descriptor being let go, or
/// two from sharing the decoder.
final class Writer: Sendable {
    let path: String
    private let file: SharedDescriptor
    private var descriptor: Int32 { file.descriptor }
    private let existing: Int64
    private let writeBytes: @Sendable (Int32, UnsafeRawBufferPointer, String) throws -> Void
    /// The body's decoder, if it is coded, and whether the file was let go.
    private let state = Locked<(decoder: ContentDecoder?, closed: Bool)>((nil, false))

    init(file: Transfer.FileTarget, writeBytes: @escaping @Sendable (Int32, UnsafeRawBufferPointer, String) throws -> Void) {
        path = file.path
        self.file = file.descriptor
        existing = file.existing
        self.writeBytes = writeBytes
    }

    /// Positions the file for `plan` (after what it holds, or emptied) and sets up decoding.
    func start(_ plan: TransferStateMachine.BodyPlan) throws {
        try state.withLock { state in
            guard !state.closed else { return }
            if plan.append {
                try FileSystem.seek(descriptor, to: existing, path: path)
            } else if existing > 0 {
                try FileSystem.truncate(descriptor, path: path)
            }
            state.decoder = plan.codings.isEmpty ? nil : ContentDecoder(plan.codings)
        }
    }

    /// Decodes and writes `bytes`; `willWrite` is asked before each write (it returns the error
    /// that stops it: a limit).
    func write(_ bytes: UnsafeRawBufferPointer, willWrite: (Int) -> (any Error)?) throws {
        try state.withLock { state in
            guard !state.closed else { return }
            func put(_ piece: UnsafeRawBufferPointer) throws {
                if let error = willWrite(piece.count) { throw error }
                try writeBytes(descriptor, piece, path)
            }
            if let decoder = state.decoder {
                try decoder.decode(bytes, emit: put)
            } else {
                try put(bytes)
            }
        }
    }

    /// Checks that every coded stream ended.
    func finish() throws {
        try state.withLock { state throws(ContentDecoder.Failure) in try state.decoder?.finish() }
    }

    func close() {
        let release = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.closed = true
            state.decoder = nil
            return true
        }
        if release { file.release() }
    }
}
