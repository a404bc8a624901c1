import Foundation

#if canImport(FoundationNetworking)
import Dispatch

/// A serial delegate queue that makes the network wait for the disk.
///
/// On Linux, URLSession hands each received chunk to the delegate with `addOperation` from
/// libcurl's queue and goes on reading the socket, so a disk slower than the network (the kernel
/// throttling writeback) piles chunks up in memory — 85 MB extra was measured for a 256 MiB body.
/// Here `addOperation` blocks libcurl's queue while `limit` chunks wait, so it stops reading and TCP
/// flow control slows the sender: memory stays bounded whatever the file size.
///
/// Never blocks a call made from this queue itself, and its operations never wait for libcurl's
/// queue, so the wait always ends.
// Safe: the only added state is a DispatchSemaphore, which is thread-safe.
final class BackpressureQueue: OperationQueue, @unchecked Sendable {
    private let slots: DispatchSemaphore

    init(limit: Int) {
        slots = DispatchSemaphore(value: limit)
        super.init()
        maxConcurrentOperationCount = 1
        name = "avenues.media.delegate"
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        guard OperationQueue.current !== self else {
            super.addOperation(block)
            return
        }
        slots.wait()
        super.addOperation { [slots] in
            block()
            slots.signal()
        }
    }
}
#endif
