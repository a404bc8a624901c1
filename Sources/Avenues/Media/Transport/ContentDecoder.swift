import CAvenuesNetwork

/// Undoes a body's codings (`gzip`, `deflate`; several, outermost first) with zlib, streaming, and
/// knows whether every stream ended: a gzip stream ends only after its trailer (CRC-32 and length)
/// checked out, so a body cut short, or one whose trailer is missing or wrong, is never taken as
/// whole. A gzip body of several members (concatenated streams) is decoded member after member.
///
/// Used by one thread at a time (a transport's callbacks); not thread-safe.
final class ContentDecoder {
    /// Why a body could not be decoded.
    enum Failure: Error, Equatable, CustomStringConvertible {
        case corrupt(String)
        case incomplete
        case zlibMissing

        var description: String {
            switch self {
            case .corrupt(let reason): "a corrupt compressed body (\(reason))"
            case .incomplete: "a compressed body that ends before its stream does"
            case .zlibMissing: "a compressed body, and zlib (libz.so.1) could not be loaded to decode it"
            }
        }
    }

    private final class Layer {
        let coding: ResponseHead.Coding
        var stream: UnsafeMutableRawPointer?
        var ended = false
        var sawInput = false

        init(_ coding: ResponseHead.Coding) { self.coding = coding }

        deinit { avenues_inflate_close(stream) }
    }

    private let layers: [Layer]
    private var buffers: [[UInt8]]
    static let bufferSize = 64 * 1024

    /// A decoder for a body whose codings were applied in `codings`' order (so the last is undone
    /// first).
    init(_ codings: [ResponseHead.Coding]) {
        layers = codings.reversed().map(Layer.init)
        buffers = layers.map { _ in [UInt8](repeating: 0, count: Self.bufferSize) }
    }

    /// Decodes `input`, handing the decoded bytes to `emit` in order.
    func decode(_ input: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        try feed(layer: 0, input, emit: emit)
    }

    /// Checks that every stream ended; throws ``Failure/incomplete`` if one did not. A coding
    /// given no bytes at all (`Content-Encoding: gzip` on an empty body) is an empty file, as curl
    /// and browsers take it: there is no stream to be cut short.
    func finish() throws(Failure) {
        for layer in layers where !layer.ended && layer.sawInput { throw .incomplete }
    }

    private func feed(layer index: Int, _ input: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard index < layers.count else {
            if !input.isEmpty { try emit(input) }
            return
        }
        let layer = layers[index]
        var offset = 0
        while offset < input.count {
            if layer.ended {
                // Bytes after a gzip member: another member (RFC 1952 §2.2); anything else is corrupt.
                guard layer.coding == .gzip, let stream = layer.stream, avenues_inflate_reset(stream) == 0 else {
                    throw Failure.corrupt("data after the end of the stream")
                }
                layer.ended = false
            }
            if layer.stream == nil {
                layer.stream = try Self.open(layer.coding, first: input[offset])
            }
            guard let stream = layer.stream else { throw Failure.zlibMissing }
            layer.sawInput = true
            var used = 0
            var made = 0
            let status = buffers[index].withUnsafeMutableBufferPointer { output in
                avenues_inflate(
                    stream, input.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) + offset }, input.count - offset, &used,
                    output.baseAddress, output.count, &made
                )
            }
            offset += used
            if made > 0 {
                let decoded = buffers[index]
                try decoded.withUnsafeBytes { try feed(layer: index + 1, UnsafeRawBufferPointer(rebasing: $0[0..<made]), emit: emit) }
            }
            switch status {
            case 0:  // Z_OK
                continue
            case 1:  // Z_STREAM_END: the trailer checked out
                layer.ended = true
            case -5 where used == 0 && made == 0:  // Z_BUF_ERROR: needs more input
                return
            case 2:
                throw Failure.corrupt("a stream that needs a preset dictionary")
            default:
                throw Failure.corrupt(status == -3 ? "bad data or checksum" : "zlib status \(status)")
            }
        }
    }

    /// A zlib stream for `coding`: gzip; or HTTP's `deflate`, which is zlib-wrapped by the standard
    /// and raw from some servers (told apart by the zlib header's check bits).
    private static func open(_ coding: ResponseHead.Coding, first: UInt8) throws(Failure) -> UnsafeMutableRawPointer {
        let bits: Int32
        switch coding {
        case .gzip: bits = 15 + 16
        case .deflate: bits = first & 0x0F == 8 ? 15 : -15
        }
        guard avenues_zlib_load() == 0 else { throw .zlibMissing }
        guard let stream = avenues_inflate_open(bits) else { throw .corrupt("zlib could not start a stream") }
        return stream
    }
}
