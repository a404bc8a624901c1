/// Runs several actions concurrently and returns their results **in the order they were added**
/// (not the order they finished). The first error is thrown and the other actions are cancelled.
///
/// ```swift
/// let forecasts = try await Zip<Forecast>()
///     .add { try await api.forecast(for: "Paris") }
///     .add { try await api.forecast(for: "Oslo") }
///     .result
/// ```
public final class Zip<Value: Sendable>: Sendable {
    private let actions: Locked<[@Sendable () async throws -> Value]>

    /// Creates a zip of `actions` (none by default).
    public init(actions: [@Sendable () async throws -> Value] = []) {
        self.actions = Locked(actions)
    }

    /// Adds an action; returns `self` so calls chain.
    @discardableResult
    public func add(_ action: @escaping @Sendable () async throws -> Value) -> Zip<Value> {
        actions.withLock { $0.append(action) }
        return self
    }

    /// Runs every action concurrently; the results in the order the actions were added.
    public var result: [Value] {
        get async throws {
            let actions = actions.withLock { $0 }
            return try await withThrowingTaskGroup(of: (Int, Value).self) { group in
                for (index, action) in actions.enumerated() {
                    group.addTask { (index, try await action()) }
                }
                var results = [Value?](repeating: nil, count: actions.count)
                // The first failure ends the group, which cancels the actions still running.
                for try await (index, value) in group { results[index] = value }
                return results.compactMap { $0 }
            }
        }
    }
}

/// Runs any number of actions concurrently and returns their results as a tuple in argument order.
/// The first error is thrown and the other actions are cancelled.
///
/// ```swift
/// let (profile, friends, settings) = try await zipAll(
///     { try await api.profile() }, { try await api.friends() }, { try await api.settings() }
/// )
/// ```
///
/// For two to six actions, `zip(_:_:)`… read the same. (A parameter-pack function named `zip` is not
/// offered: next to the standard library's `zip` the compiler stops inferring closure literals as
/// `@Sendable`, so call sites would need explicit closure types.)
public func zipAll<each T: Sendable>(
    _ actions: repeat @escaping @Sendable () async throws -> each T
) async throws -> (repeat each T) {
    let slots = (repeat ZipSlot<each T>())
    try await withThrowingTaskGroup(of: Void.self) { group in
        for (action, slot) in repeat (each actions, each slots) {
            group.addTask { slot.fill(try await action()) }
        }
        // Not waitForAll(), which waits for every action before throwing: the first failure must end
        // the group, which then cancels the actions still running.
        for try await _ in group {}
    }
    return (repeat try (each slots).take())
}

/// Runs 2 actions concurrently; their results in argument order. The first error is thrown and the
/// others are cancelled. See ``zipAll(_:)``.
public func zip<A: Sendable, B: Sendable>(
    _ a: @escaping @Sendable () async throws -> A,
    _ b: @escaping @Sendable () async throws -> B
) async throws -> (A, B) {
    try await zipAll(a, b)
}

/// Runs 3 actions concurrently; their results in argument order. The first error is thrown and the
/// others are cancelled. See ``zipAll(_:)``.
public func zip<A: Sendable, B: Sendable, C: Sendable>(
    _ a: @escaping @Sendable () async throws -> A,
    _ b: @escaping @Sendable () async throws -> B,
    _ c: @escaping @Sendable () async throws -> C
) async throws -> (A, B, C) {
    try await zipAll(a, b, c)
}

/// Runs 4 actions concurrently; their results in argument order. The first error is thrown and the
/// others are cancelled. See ``zipAll(_:)``.
public func zip<A: Sendable, B: Sendable, C: Sendable, D: Sendable>(
    _ a: @escaping @Sendable () async throws -> A,
    _ b: @escaping @Sendable () async throws -> B,
    _ c: @escaping @Sendable () async throws -> C,
    _ d: @escaping @Sendable () async throws -> D
) async throws -> (A, B, C, D) {
    try await zipAll(a, b, c, d)
}

/// Runs 5 actions concurrently; their results in argument order. The first error is thrown and the
/// others are cancelled. See ``zipAll(_:)``.
public func zip<A: Sendable, B: Sendable, C: Sendable, D: Sendable, E: Sendable>(
    _ a: @escaping @Sendable () async throws -> A,
    _ b: @escaping @Sendable () async throws -> B,
    _ c: @escaping @Sendable () async throws -> C,
    _ d: @escaping @Sendable () async throws -> D,
    _ e: @escaping @Sendable () async throws -> E
) async throws -> (A, B, C, D, E) {
    try await zipAll(a, b, c, d, e)
}

/// Runs 6 actions concurrently; their results in argument order. The first error is thrown and the
/// others are cancelled. See ``zipAll(_:)``.
public func zip<A: Sendable, B: Sendable, C: Sendable, D: Sendable, E: Sendable, F: Sendable>(
    _ a: @escaping @Sendable () async throws -> A,
    _ b: @escaping @Sendable () async throws -> B,
    _ c: @escaping @Sendable () async throws -> C,
    _ d: @escaping @Sendable () async throws -> D,
    _ e: @escaping @Sendable () async throws -> E,
    _ f: @escaping @Sendable () async throws -> F
) async throws -> (A, B, C, D, E, F) {
    try await zipAll(a, b, c, d, e, f)
}

/// Where one action of ``zipAll(_:)`` leaves its result.
final class ZipSlot<T: Sendable>: Sendable {
    private let value = Locked<T?>(nil)

    func fill(_ result: T) {
        value.withLock { $0 = result }
    }

    func take() throws -> T {
        guard let result = value.withLock({ $0 }) else {
            preconditionFailure("Invalid state: zip finished without a result for an action")
        }
        return result
    }
}
