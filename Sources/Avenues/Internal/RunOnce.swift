/// A closure that runs at most once, on the first call to ``run()``: the stop behind a public
/// `cancel()` that may be called more than once, from any thread, and from inside what it stops.
struct RunOnce: ~Copyable, Sendable {
    private let body: Locked<(@Sendable () -> Void)?>

    init(_ body: @escaping @Sendable () -> Void) {
        self.body = Locked(body)
    }

    /// Runs the closure if no call ran it before, outside the lock (it may call back in).
    func run() {
        let body = body.withLock { body in
            defer { body = nil }
            return body
        }
        body?()
    }
}
