import Synchronization

/// A task executor that runs nothing until ``drain()`` is called, then runs every job in the order
/// it was enqueued, on the calling thread. Workers of an ``Avenues/AutoProcessor`` given this
/// executor make the whole system single-threaded and deterministic.
public final class ManualExecutor: TaskExecutor, Sendable {
    private let jobs = Mutex((queue: [UnownedJob](), next: 0))

    /// Creates an executor with nothing to run.
    public init() {}

    /// Keeps `job` for the next ``drain()``.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.queue.append(job) }
    }

    /// Runs jobs until none is left, including the jobs those jobs enqueue.
    public func drain() {
        while let job = nextJob() {
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    private func nextJob() -> UnownedJob? {
        jobs.withLock { jobs in
            guard jobs.next < jobs.queue.count else {
                jobs = ([], 0)
                return nil
            }
            defer { jobs.next += 1 }
            return jobs.queue[jobs.next]
        }
    }
}
