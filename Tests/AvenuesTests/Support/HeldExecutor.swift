import Foundation
@testable import Avenues

/// A task executor that runs nothing until ``runAll()``: work queued on it has not been picked up by
/// any worker until the test says so, whatever the machine's scheduling.
final class HeldExecutor: TaskExecutor, Sendable {
    private let jobs = Locked([UnownedJob]())

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


/// A task executor with threads of its own, running jobs in order: a test may block one of them (in
/// a callback) to hold a load at an exact point without starving Swift's cooperative pool.
final class ThreadExecutor: TaskExecutor, Sendable {
    // `Locked`, not `Mutex`: ThreadSanitizer sees no ordering in Linux's `Mutex`, and with two
    // threads it reported the queue as raced (a false positive that failed a CI run).
    private let jobs = Locked((queue: [UnownedJob](), finished: false))
    private let ready = DispatchSemaphore(value: 0)
    private let threads: Int

    init(threads: Int = 1) {
        self.threads = threads
        for number in 0 ..< threads {
            let thread = Thread { [self] in run() }
            thread.name = "ThreadExecutor \(number)"
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.queue.append(job) }
        ready.signal()
    }

    /// Ends the threads once the jobs queued so far have run.
    func finish() {
        jobs.withLock { $0.finished = true }
        for _ in 0 ..< threads { ready.signal() }
    }

    private func run() {
        while true {
            ready.wait()
            let next = jobs.withLock { jobs -> (UnownedJob?, Bool) in
                jobs.queue.isEmpty ? (nil, jobs.finished) : (jobs.queue.removeFirst(), false)
            }
            if let job = next.0 { job.runSynchronously(on: asUnownedTaskExecutor()) } else if next.1 { return }
        }
    }
}
