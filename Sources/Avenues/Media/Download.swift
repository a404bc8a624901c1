import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One transfer: the body goes chunk by chunk into a hidden temporary file, and the caller is
/// resumed when the transfer ends. Callbacks arrive on the session's serial delegate queue.
final class Download: Sendable {
    private struct State {
        var file: FileHandle?
        var status: Int?
        var expected: Int64?
        var received: Int64 = 0
        var lastReported: Int64 = 0
        var failure: (any Error)?
        var continuation: CheckedContinuation<Int64, any Error>?
        var finished: Result<Int64, any Error>?
    }

    let url: URL
    let temporaryPath: String
    private let state = Locked(State())
    private let report: @Sendable (DownloadProgress) -> Void
    /// Progress is reported at least every this many bytes, not per chunk.
    static let reportEvery: Int64 = 256 * 1024

    init(url: URL, temporaryPath: String, file: FileHandle, report: @escaping @Sendable (DownloadProgress) -> Void) {
        self.url = url
        self.temporaryPath = temporaryPath
        self.report = report
        state.withLock { $0.file = file }
    }

    /// Waits for the end of the transfer; returns the number of bytes written to the temporary file.
    func waitUntilFinished() async throws -> Int64 {
        try await withCheckedThrowingContinuation { continuation in
            let finished = state.withLock { state -> Result<Int64, any Error>? in
                if let finished = state.finished { return finished }
                state.continuation = continuation
                return nil
            }
            if let finished { continuation.resume(with: finished) }
        }
    }

    // MARK: Delegate events

    /// The response head: a status outside 2xx stops the transfer before any byte is kept.
    func received(_ response: URLResponse) -> Bool {
        let http = response as? HTTPURLResponse
        let status = http?.statusCode ?? 200
        let expected = response.expectedContentLength >= 0 ? response.expectedContentLength : nil
        return state.withLock { state in
            state.status = status
            state.expected = expected
            guard (200...299).contains(status) else {
                state.failure = AsyncMediaError.httpStatus(status, url: url)
                return false
            }
            return true
        }
    }

    /// A chunk of the body: appended to the temporary file.
    func received(_ data: Data) -> Bool {
        let (file, progress) = state.withLock { state -> (FileHandle?, DownloadProgress?) in
            guard state.failure == nil else { return (nil, nil) }
            state.received += Int64(data.count)
            guard state.received - state.lastReported >= Self.reportEvery else { return (state.file, nil) }
            state.lastReported = state.received
            return (state.file, DownloadProgress(received: state.received, expected: state.expected, isComplete: false))
        }
        guard let file else { return false }
        do {
            try file.write(contentsOf: data)
        } catch {
            state.withLock { $0.failure = error }
            return false
        }
        if let progress { report(progress) }
        return true
    }

    /// The end of the transfer: checks it, closes the file, resumes the caller.
    func completed(with transferError: (any Error)?) {
        let (continuation, result) = state.withLock { state -> (CheckedContinuation<Int64, any Error>?, Result<Int64, any Error>) in
            try? state.file?.close()
            state.file = nil
            let result: Result<Int64, any Error>
            if let failure = state.failure {
                result = .failure(failure)
            } else if let transferError {
                let cancelled = (transferError as? URLError)?.code == .cancelled
                result = .failure(cancelled ? CancellationError() : transferError)
            } else if state.status == nil {
                result = .failure(AsyncMediaError.noResponse(url))
            } else if let expected = state.expected, expected != state.received {
                result = .failure(AsyncMediaError.incompleteBody(received: state.received, expected: expected, url: url))
            } else {
                result = .success(state.received)
            }
            state.finished = result
            defer { state.continuation = nil }
            return (state.continuation, result)
        }
        continuation?.resume(with: result)
    }
}

/// Routes a session's delegate callbacks to the ``Download`` of each task.
final class DownloadRouter: NSObject, URLSessionDataDelegate, Sendable {
    private let downloads = Locked([Int: Download]())

    func register(_ download: Download, for task: URLSessionTask) {
        downloads.withLock { $0[task.taskIdentifier] = download }
    }

    private func download(for task: URLSessionTask) -> Download? {
        downloads.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let proceed = download(for: dataTask)?.received(response) ?? false
        completionHandler(proceed ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if download(for: dataTask)?.received(data) == false { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let download = downloads.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        download?.completed(with: error)
    }
}
