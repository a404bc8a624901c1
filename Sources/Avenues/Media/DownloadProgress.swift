/// How far a download has come.
public struct DownloadProgress: Sendable, Hashable, CustomStringConvertible {
    /// Bytes received so far.
    public var received: Int64
    /// Bytes expected in all (the `Content-Length`), if the server said.
    public var expected: Int64?
    /// Whether the file is complete and in the cache.
    public var isComplete: Bool

    /// Creates a progress value.
    public init(received: Int64, expected: Int64?, isComplete: Bool) {
        self.received = received
        self.expected = expected
        self.isComplete = isComplete
    }

    /// `received / expected`, when the size is known.
    public var fractionCompleted: Double? {
        guard let expected, expected > 0 else { return isComplete ? 1 : nil }
        return Double(received) / Double(expected)
    }

    /// "12345 of 67890 bytes".
    public var description: String {
        "\(received) of \(expected.map(String.init) ?? "?") bytes\(isComplete ? ", complete" : "")"
    }
}
