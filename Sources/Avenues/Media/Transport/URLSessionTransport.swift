// Apple platforms only: on Linux URLSession lives in FoundationNetworking, and linking it costs every
// program that uses Avenues 40 shared libraries and about 14 ms at start (see CHANGELOG); there
// ``CurlTransport`` moves the bytes.
#if !canImport(FoundationNetworking)
import Foundation

/// Downloads through URLSession: ``AsyncMedia``'s default transport on Apple platforms, where
/// URLSession paces transfers itself. (Not on Linux, where swift-corelibs-foundation's URLSession
/// stalls every session in the process during a fast download, cannot be paused, and lives in
/// FoundationNetworking, which a program would load only for it: ``CurlTransport`` runs there.)
///
/// URLSession decodes `gzip` bodies itself (``decodesContentCodings``), so AsyncMedia cannot check
/// such a stream is whole on this transport. Redirects are not followed here (AsyncMedia follows
/// them, dropping credentials across origins). The delegate never blocks a URLSession thread on
/// anything but the body's write, and never calls back into the session synchronously: a transfer
/// is cancelled from another queue.
public final class URLSessionTransport: NSObject, DownloadTransport, URLSessionDataDelegate, Sendable {
    private let sinks = Locked([Int: any DownloadSink]())
    private let session: Locked<URLSession?> = Locked(nil)

    /// URLSession removes content codings itself.
    public var decodesContentCodings: Bool { true }

    /// A transport over a session with `configuration` (copied; its URL cache is switched off: the
    /// downloaded files are the cache).
    public init(configuration: URLSessionConfiguration = .default) {
        super.init()
        let configuration = (configuration.copy() as? URLSessionConfiguration) ?? configuration
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1  // a download's pieces are written in order
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
        self.session.withLock { $0 = session }
    }

    /// Cancels every task; the transport is not used afterwards.
    public func invalidate() {
        let session = session.withLock { session -> URLSession? in
            defer { session = nil }
            return session
        }
        session?.invalidateAndCancel()
    }

    /// Starts `request` as a data task of this transport's session; its head and body go to `sink`.
    public func start(_ request: DownloadRequest, into sink: any DownloadSink) -> DownloadHandle {
        guard let session = session.withLock({ $0 }) else {
            sink.end(CancellationError())
            return DownloadHandle {}
        }
        let seconds = min(request.limits.idleTimeout.seconds, 365 * 86_400)
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: seconds)
        for field in request.headers { urlRequest.setValue(field.value, forHTTPHeaderField: field.name) }
        let task = session.dataTask(with: urlRequest)
        sinks.withLock { $0[task.taskIdentifier] = sink }
        task.resume()
        // Off the caller's thread: cancel() waits for URLSession's queue, which may be busy.
        return DownloadHandle { DispatchQueue.global().async { task.cancel() } }
    }

    private func sink(for task: URLSessionTask) -> (any DownloadSink)? {
        sinks.withLock { $0[task.taskIdentifier] }
    }

    public func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let http = response as? HTTPURLResponse
        let fields = (http?.allHeaderFields ?? [:]).compactMap { name, value -> HTTPField? in
            guard let name = name as? String else { return nil }
            return HTTPField(name: name, value: "\(value)")
        }
        let proceed = sink(for: dataTask)?.head(status: http?.statusCode ?? 200, fields: fields) ?? false
        completionHandler(proceed ? .allow : .cancel)
    }

    /// Hands a piece of the body to the task's sink; cancels the task (off this queue) if it refuses it.
    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let sink = sink(for: dataTask) else { return }
        let proceed = data.withUnsafeBytes { sink.body($0) }
        if !proceed { DispatchQueue.global().async { dataTask.cancel() } }
    }

    /// Ends the task's sink, with the error if there is one.
    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let sink = sinks.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        sink?.end(error)
    }

    /// Refuses every redirect: AsyncMedia follows them itself (its limit, its credential rules).
    public func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)  // AsyncMedia follows redirects itself
    }
}

#endif
