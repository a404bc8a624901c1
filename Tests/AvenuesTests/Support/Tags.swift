import Testing

extension Tag {
    /// A fault of a library Avenues learns from (AsyncMux, Nuke, URLSession on Linux…) that must not
    /// happen here; the test's display name says which library and which fault.
    @Tag static var anchorFault: Self
}
