import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Downloads through URLSession: `https`, proxies, and whatever ``SocketTransport`` hands over.
///
/// The delegate never blocks a URLSession thread on anything but the file write, and never calls back
/// into the session synchronously: a transfer that must stop cancels its task from another queue.
/// (Blocking libcurl's queue while a chunk waits deadlocks every URLSession in the process when the
/// disk fills: the delegate's `cancel()` waits for that very queue.)
///
/// On Linux the delegate runs on libcurl's own thread (``InlineOperationQueue``), so the body is
/// written as it arrives and nothing piles up in memory whatever the file's size; URLSession offers
/// no other way to slow a transfer down. On Apple platforms URLSession paces transfers itself and a
/// serial delegate queue is used.
final class SessionTransport: NSObject, URLSessionDataDelegate, Sendable {
    private let transfers = Locked([Int: Transfer]())
    private let session: Locked<URLSession?> = Locked(nil)

    init(configuration: URLSessionConfiguration) {
        super.init()
        let configuration = (configuration.copy() as? URLSessionConfiguration) ?? configuration
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        #if canImport(FoundationNetworking)
        let queue: OperationQueue = InlineOperationQueue()
        #else
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1  // a download's chunks are written in order
        #endif
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
        self.session.withLock { $0 = session }
    }

    /// Cancels every task; the session is not used afterwards.
    func invalidate() {
        let session = session.withLock { session -> URLSession? in
            defer { session = nil }
            return session
        }
        session?.invalidateAndCancel()
    }

    /// Starts `url` into `transfer` and returns at once; the transfer learns the outcome.
    func start(_ url: URL, headers: [(String, String)], transfer: Transfer) {
        guard let session = session.withLock({ $0 }) else {
            transfer.end(CancellationError())
            return
        }
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: min(transfer.limits.idleTimeout.seconds, 365 * 86_400))
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let task = session.dataTask(with: request)
        transfers.withLock { $0[task.taskIdentifier] = transfer }
        // Off the caller's thread: cancel() waits for URLSession's queue, which may be busy.
        transfer.onStop { DispatchQueue.global().async { task.cancel() } }
        task.resume()
    }

    private func transfer(for task: URLSessionTask) -> Transfer? {
        transfers.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let http = response as? HTTPURLResponse
        // With a Content-Encoding, libcurl hands over decoded bytes while Content-Length counts the
        // encoded ones, so the length can only be checked for unencoded bodies.
        let encoding = http?.value(forHTTPHeaderField: "Content-Encoding")?.lowercased()
        let encoded = encoding.map { $0 != "identity" } ?? false
        let length = response.expectedContentLength >= 0 ? response.expectedContentLength : nil
        let proceed = transfer(for: dataTask)?.head(
            status: http?.statusCode ?? 200, contentLength: length, encoded: encoded,
            retryAfter: http?.value(forHTTPHeaderField: "Retry-After")
        ) ?? false
        completionHandler(proceed ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let transfer = transfer(for: dataTask) else { return }
        _ = data.withUnsafeBytes { transfer.body($0) }  // a failed transfer stops its task itself
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let transfer = transfers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        transfer?.end(error)
    }
}

#if canImport(FoundationNetworking)
/// A delegate "queue" that runs each callback at once on the thread that adds it — libcurl's, for
/// a session's data callbacks — so a body chunk is written before libcurl reads the next one.
///
/// Callbacks then run on URLSession's own queue: they must not call back into the session
/// synchronously (``SessionTransport`` cancels tasks from another queue).
// Safe: it adds no state to OperationQueue; blocks run on their caller's thread, in its order.
final class InlineOperationQueue: OperationQueue, @unchecked Sendable {
    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        block()
    }

    override func addOperation(_ operation: Operation) {
        operation.start()
    }
}
#endif
