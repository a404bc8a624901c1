import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One download into one temporary file, whichever transport carries it. The transport reports the
/// response head, the body's bytes and the end; this decides what is acceptable (a 200 or 203, the
/// announced length, the limits), writes the bytes on the transport's own thread — so the network
/// goes no faster than the disk and nothing piles up in memory — and resumes the waiting run.
///
/// A transfer stops at the first failure: the transport is told through the `stop` closure it
/// registered (closing its socket or cancelling its task, never waiting), and later bytes are
/// dropped.
final class Transfer: Sendable {
    let url: URL
    let temporaryPath: String
    let limits: DownloadLimits

    private let descriptor: Int32
    private let writeBytes: @Sendable (Int32, UnsafeRawBufferPointer) throws -> Void
    private let report: @Sendable (DownloadProgress) -> Void
    private let started = ContinuousClock.now
    private let state: Locked<State>

    /// Progress is reported at least every this many bytes, not per chunk.
    static let reportEvery: Int64 = 256 * 1024

    private struct State {
        var status: Int?
        /// The length the body must have (`Content-Length` of an unencoded body).
        var expected: Int64?
        var received: Int64 = 0
        var lastReported: Int64 = 0
        var lastActivity: ContinuousClock.Instant
        var failure: (any Error)?
        var result: Result<Int64, any Error>?
        var continuation: CheckedContinuation<Int64, any Error>?
        var stop: (@Sendable () -> Void)?
        var fileOpen = true
    }

    init(
        url: URL,
        temporaryPath: String,
        descriptor: Int32,
        limits: DownloadLimits,
        writeBytes: @escaping @Sendable (Int32, UnsafeRawBufferPointer) throws -> Void,
        report: @escaping @Sendable (DownloadProgress) -> Void
    ) {
        self.url = url
        self.temporaryPath = temporaryPath
        self.descriptor = descriptor
        self.limits = limits
        self.writeBytes = writeBytes
        self.report = report
        state = Locked(State(lastActivity: .now))
    }

    // MARK: From the transport

    /// Registers how to stop the transport; called at once if the transfer has already failed.
    func onStop(_ stop: @escaping @Sendable () -> Void) {
        let stopNow = state.withLock { state -> Bool in
            guard state.failure == nil, state.result == nil else { return true }
            state.stop = stop
            return false
        }
        if stopNow { stop() }
    }

    /// The response head: `true` to read the body. `encoded` says the body's bytes are decoded from
    /// a `Content-Encoding` (gzip), so `Content-Length` does not count them; `retryAfter` is the
    /// `Retry-After` header, if any.
    func head(status: Int, contentLength: Int64?, encoded: Bool, retryAfter: String? = nil) -> Bool {
        let failure: (any Error)?
        if status == 429 || status == 503 {
            failure = AsyncMediaError.unavailable(status: status, url: url, retryAfter: retryAfter.flatMap { Transfer.delay(retryAfter: $0) })
        } else if status != 200 && status != 203 {
            failure = AsyncMediaError.httpStatus(status, url: url)
        } else if let maximum = limits.maximumSize, let contentLength, !encoded, contentLength > maximum {
            failure = AsyncMediaError.tooLarge(url, limit: maximum)
        } else {
            failure = nil
        }
        state.withLock { state in
            state.status = status
            state.expected = encoded ? nil : contentLength
            state.lastActivity = .now
        }
        if let failure { fail(failure) }
        return failure == nil
    }

    /// A piece of the body, written to the file on the calling thread; `false` when the transfer has
    /// failed and the transport should stop.
    func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let size = Int64(bytes.count)
        let (proceed, tooLarge) = state.withLock { state -> (Bool, Bool) in
            guard state.failure == nil, state.result == nil, state.fileOpen else { return (false, false) }
            state.received += size
            state.lastActivity = .now
            if let maximum = limits.maximumSize, state.received > maximum { return (false, true) }
            return (true, false)
        }
        if tooLarge { fail(AsyncMediaError.tooLarge(url, limit: limits.maximumSize ?? 0)) }
        guard proceed else { return false }
        do {
            try writeBytes(descriptor, bytes)
        } catch {
            fail(AsyncMediaError.cannotStore(url, reason: DiskStorageError(converting: error, path: temporaryPath)))
            return false
        }
        let progress = state.withLock { state -> DownloadProgress? in
            guard state.received - state.lastReported >= Self.reportEvery else { return nil }
            state.lastReported = state.received
            return DownloadProgress(received: state.received, expected: state.expected, isComplete: false)
        }
        if let progress { report(progress) }
        return true
    }

    /// The transport is done: `error` is how it failed, `nil` if the body ended as its framing says.
    func end(_ error: (any Error)?) {
        finish { state in
            if let failure = state.failure { return .failure(failure) }
            if let error {
                let cancelled = (error as? URLError)?.code == .cancelled || error is CancellationError
                return .failure(cancelled ? CancellationError() : error)
            }
            guard state.status != nil else { return .failure(AsyncMediaError.noResponse(url)) }
            if let expected = state.expected, expected != state.received {
                return .failure(AsyncMediaError.incompleteBody(received: state.received, expected: expected, url: url))
            }
            return .success(state.received)
        }
    }

    /// Fails the transfer now (a limit, a disk error, cancellation) and stops the transport.
    func fail(_ error: any Error) {
        let stop = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.failure == nil, state.result == nil else { return nil }
            state.failure = error
            defer { state.stop = nil }
            return state.stop
        }
        stop?()
    }

    /// A `Retry-After` value — seconds, or an HTTP date — as a delay from now.
    static func delay(retryAfter value: String, now: Date = Date()) -> Duration? {
        let text = value.trimmingSpaces()
        if let seconds = Int64(text), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: text) else { return nil }
        return .seconds(max(0, date.timeIntervalSince(now)))
    }

    // MARK: For the run

    /// Waits for the end of the transfer, enforcing the time limits; returns the bytes written.
    /// Cancelling the calling task fails the transfer with `CancellationError` and stops it.
    func wait() async throws -> Int64 {
        let watchdog = Task { [self] in await watch() }
        defer { watchdog.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let result = state.withLock { state -> Result<Int64, any Error>? in
                    if let result = state.result { return result }
                    state.continuation = continuation
                    return nil
                }
                if let result { continuation.resume(with: result) }
            }
        } onCancel: {
            fail(CancellationError())
        }
    }

    /// Fails the transfer when no byte arrived for `idleTimeout` or it ran past `totalTimeout`.
    private func watch() async {
        let clock = ContinuousClock()
        while !Task.isCancelled {
            let (lastActivity, done) = state.withLock { ($0.lastActivity, $0.result != nil || $0.failure != nil) }
            if done { return }
            let now = clock.now
            if let total = limits.totalTimeout, now - started >= total {
                fail(AsyncMediaError.tookTooLong(url, limit: total))
                return
            }
            if now - lastActivity >= limits.idleTimeout {
                fail(URLError(.timedOut, userInfo: [NSURLErrorFailingURLErrorKey: url]))
                return
            }
            var wake = lastActivity + limits.idleTimeout
            if let total = limits.totalTimeout { wake = min(wake, started + total) }
            try? await Saturating.sleep(until: wake, on: clock)
        }
    }

    private func finish(_ decide: (inout State) -> Result<Int64, any Error>) {
        let (continuation, result, close) = state.withLock { state -> (CheckedContinuation<Int64, any Error>?, Result<Int64, any Error>?, Bool) in
            guard state.result == nil else { return (nil, nil, false) }
            let result = decide(&state)
            state.result = result
            state.stop = nil
            defer { state.continuation = nil }
            let close = state.fileOpen
            state.fileOpen = false
            return (state.continuation, result, close)
        }
        if close { FileSystem.close(descriptor) }
        if let continuation, let result { continuation.resume(with: result) }
    }
}
