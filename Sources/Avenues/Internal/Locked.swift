import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A `Synchronization.Mutex` that ThreadSanitizer understands.
///
/// On Linux, `Mutex` locks with futex system calls inside the standard library, which is not built
/// with TSan, so TSan sees no ordering between critical sections and reports every guarded access as
/// a race; real races would drown in those reports. When (and only when) the TSan runtime is loaded,
/// this tells it that each critical section acquires and releases the lock. Otherwise it is a
/// `Mutex` plus one predictable branch.
struct Locked<State: ~Copyable>: ~Copyable, Sendable {
    /// A heap object whose address names this lock to TSan; it never moves.
    private final class Key: Sendable {}

    private let mutex: Mutex<State>
    private let key = Key()

    init(_ initialState: consuming sending State) {
        mutex = Mutex(initialState)
    }

    /// Runs `body` with exclusive access to the state.
    borrowing func withLock<Result: ~Copyable, Failure: Error>(
        _ body: (inout sending State) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        try mutex.withLock { (state: inout sending State) throws(Failure) -> sending Result in
            // Announced before `state` is touched and withdrawn after, so TSan orders the accesses.
            let address = UnsafeRawPointer(Unmanaged.passUnretained(key).toOpaque())
            ThreadSanitizer.acquire?(address)
            defer { ThreadSanitizer.release?(address) }
            return try body(&state)
        }
    }
}

/// ThreadSanitizer's annotation entry points, found at run time so normal builds do not link TSan.
enum ThreadSanitizer {
    typealias Annotation = @convention(c) (UnsafeRawPointer?) -> Void

    static let acquire = lookUp("__tsan_acquire")
    static let release = lookUp("__tsan_release")

    private static func lookUp(_ name: String) -> Annotation? {
        guard let program = dlopen(nil, RTLD_NOW), let symbol = dlsym(program, name) else { return nil }
        return unsafeBitCast(symbol, to: Annotation.self)
    }
}
