/// A function given after construction (typically a `[weak self]` closure set at the end of an
/// `init`) and called from any thread.
///
/// The function is kept in a struct on purpose: a `Mutex` whose state *is* a function type
/// reabstracts it on every `inout` access, wrapping it in two more thunks each time, so after a few
/// hundred thousand calls calling it overflows the stack.
final class LateBound<Input, Output>: Sendable {
    private struct Slot {
        var function: (@Sendable (Input) -> Output)?
    }

    private let slot = Locked(Slot())

    init() {}

    /// Sets (or replaces) the function.
    func set(_ function: @escaping @Sendable (Input) -> Output) {
        slot.withLock { $0.function = function }
    }

    /// Calls the function outside the lock; `nil` if none was set.
    func callAsFunction(_ input: Input) -> Output? {
        slot.withLock { $0.function }?(input)
    }
}
