/// How much an ``Avenue`` is holding, for tests and diagnostics: both are zero for an avenue whose
/// rows were all cancelled, whatever it did before.
///
/// Its fields have the names of the tuple it replaces, so `avenue.tableSizes.rows` reads as before.
public struct AvenueTableSizes: Sendable, Hashable, CustomStringConvertible {
    /// Rows assigned a key.
    public var rows: Int
    /// Keys whose load is in flight (claimed from the processor).
    public var loads: Int

    /// Sizes of `rows` rows and `loads` loads.
    @inlinable
    public init(rows: Int, loads: Int) {
        (self.rows, self.loads) = (rows, loads)
    }

    /// `true` when the avenue holds no row and no load.
    public var isIdle: Bool { rows == 0 && loads == 0 }

    /// `"rows: 3, loads: 1"`.
    public var description: String { "rows: \(rows), loads: \(loads)" }
}
