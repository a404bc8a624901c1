/// A multi-key fetch answered without the value for a key it was asked for.
public struct MissingValueError: Error, CustomStringConvertible {
    /// The key, as text.
    public let key: String

    /// What happened and what to check.
    public var description: String {
        "The back end's answer had no value for \(key); check that the multi-key fetch returns every key it is given."
    }
}
