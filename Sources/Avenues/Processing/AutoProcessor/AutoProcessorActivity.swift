/// What an ``AutoProcessor`` is doing now, for status lines.
public struct AutoProcessorActivity: Sendable, Hashable {
    /// Keys waiting for a worker.
    public var queued: Int
    /// Keys whose work is running.
    public var running: Int

    @usableFromInline
    init(queued: Int, running: Int) {
        (self.queued, self.running) = (queued, running)
    }
}
