/// `count` and `noun`, the noun in the plural unless the count is exactly one: "1 folder",
/// "0 folders", "≥ 1 commits" (at least one may be more).
///
/// - Parameters:
///   - count: what is counted, as it is shown (an `Int`, or a row count such as "≥ 500").
///   - noun: the singular; the plural adds "s".
public func counted(_ count: some CustomStringConvertible, _ noun: String) -> String {
    let text = count.description
    return "\(text) \(noun)\(text == "1" ? "" : "s")"
}
