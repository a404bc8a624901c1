import Testing

extension Tag {
    /// A fault found in a library we learn from (DESIGN.md, "Known faults in the anchors"); the
    /// test's display name says which.
    @Tag static var anchorFault: Self
}
