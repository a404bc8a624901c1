#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A number that identifies the calling thread while it lives; never 0.
///
/// Used to recognise re-entrant calls (a callback that cancels its own row) without task-locals,
/// which a `Task {}` started inside the callback would inherit.
@usableFromInline
enum ThreadIdentity {
    @inlinable
    static var current: UInt {
        #if canImport(Darwin)
        return UInt(bitPattern: pthread_self())
        #else
        return UInt(pthread_self())
        #endif
    }
}
