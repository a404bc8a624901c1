import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
#error("Unsupported platform: Avenues needs Darwin, Glibc or Musl")
#endif

// Inlinable: every hot path above takes this lock; unspecialized, each `withLock` was a generic call.
/// A `Synchronization.Mutex` that ThreadSanitizer understands.
///
/// On Linux, `Mutex` locks with futex system calls inside the standard library, which is not built
/// with TSan, so TSan sees no ordering between critical sections and reports every guarded access as
/// a race; real races would drown in those reports. When (and only when) the TSan runtime is loaded,
/// this tells it that each critical section acquires and releases the lock. Otherwise it is a
/// `Mutex` plus one predictable branch on a field (the hooks are looked up once, at `init`).
// `package`: AvenuesSQLite locks with it too.
@usableFromInline
package struct Locked<State: ~Copyable>: ~Copyable, Sendable {
    /// A heap object whose address names this lock to TSan; it never moves.
    @usableFromInline
    final class Key: Sendable {
        @usableFromInline init() {}
    }

    @usableFromInline let mutex: Mutex<State>
    /// The hooks and the key, only when the TSan runtime is loaded: otherwise no key is made (a lock
    /// is made per download, and the key was a heap allocation of its own).
    @usableFromInline let annotations: (hooks: ThreadSanitizer.Annotations, key: Key)?

    @inlinable
    package init(_ initialState: consuming sending State) {
        mutex = Mutex(initialState)
        annotations = ThreadSanitizer.annotations.map { ($0, Key()) }
    }

    /// Runs `body` with exclusive access to the state.
    @inlinable @inline(__always)
    package borrowing func withLock<Result: ~Copyable, Failure: Error>(
        _ body: (inout sending State) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        try mutex.withLock { (state: inout sending State) throws(Failure) -> sending Result in
            guard let annotations else { return try body(&state) }
            // Announced before `state` is touched and withdrawn after, so TSan orders the accesses.
            let address = UnsafeRawPointer(Unmanaged.passUnretained(annotations.key).toOpaque())
            annotations.hooks.acquire(address)
            defer { annotations.hooks.release(address) }
            return try body(&state)
        }
    }
}

/// ThreadSanitizer's annotation entry points, found at run time so normal builds do not link TSan.
@usableFromInline
enum ThreadSanitizer {
    @usableFromInline
    typealias Annotation = @convention(c) (UnsafeRawPointer?) -> Void

    @usableFromInline
    struct Annotations: Sendable {
        @usableFromInline let acquire: Annotation
        @usableFromInline let release: Annotation
    }

    /// The hooks, or `nil` when the TSan runtime is not loaded.
    @usableFromInline
    static let annotations: Annotations? = {
        guard let acquire = lookUp("__tsan_acquire"), let release = lookUp("__tsan_release") else { return nil }
        return Annotations(acquire: acquire, release: release)
    }()

    private static func lookUp(_ name: String) -> Annotation? {
        guard let program = dlopen(nil, RTLD_NOW), let symbol = dlsym(program, name) else { return nil }
        return unsafeBitCast(symbol, to: Annotation.self)
    }
}
