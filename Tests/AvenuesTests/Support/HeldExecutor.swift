import Synchronization

/// A task executor that runs nothing until ``runAll()``: work queued on it has not been picked up by
/// any worker until the test says so, whatever the machine's scheduling.
final class HeldExecutor: TaskExecutor, Sendable {
    private let jobs = Mutex([UnownedJob]())

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
    }

    /// Runs every job queued so far and those they queue, on the calling thread.
    func runAll() {
        while let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
