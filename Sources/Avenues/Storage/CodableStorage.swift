import Foundation

extension Storage where Value == Data {
    /// A view of this byte storage holding `Codable` values as JSON, built from
    /// ``compactMapValues(_:_:)``: bytes that do not decode read as a miss, and a value that cannot be
    /// encoded removes the entry rather than leaving an older one behind.
    ///
    /// ```swift
    /// let profiles = try DiskStorage<String>(name: "my-tool/profiles").codable(Profile.self)
    /// profiles.set(profile, for: profile.id)
    /// ```
    ///
    /// - Parameters:
    ///   - type: the value type.
    ///   - makeEncoder: makes the encoder for each write; a plain `JSONEncoder` by default.
    ///   - makeDecoder: makes the decoder for each read; a plain `JSONDecoder` by default.
    public func codable<Decoded: Codable & Sendable>(
        _ type: Decoded.Type = Decoded.self,
        encoder makeEncoder: @escaping @Sendable () -> JSONEncoder = { JSONEncoder() },
        decoder makeDecoder: @escaping @Sendable () -> JSONDecoder = { JSONDecoder() }
    ) -> ValueMappedStorage<Self, Decoded> {
        compactMapValues(
            { data in try? makeDecoder().decode(Decoded.self, from: data) },
            { value in try? makeEncoder().encode(value) }
        )
    }
}
