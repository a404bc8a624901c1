/// Decodes an HTTP/1.1 `Transfer-Encoding: chunked` body incrementally: bytes go in as they arrive
/// from the socket, body bytes come out, framing never reaches the file.
///
/// Bounded against hostile input: a size or trailer line longer than 4 KiB, a size that is not hex
/// or overflows `Int64`, or missing CRLFs fail the download instead of being guessed at.
struct ChunkedBody {
    static let maximumLine = 4 * 1024

    enum Failure: Error, Equatable {
        case malformed(String)
    }

    private enum State {
        case size
        case data(remaining: Int64)
        /// The CRLF that must follow a chunk's data.
        case dataEnd
        case trailer
        case done
    }

    private var state = State.size
    private var line: [UInt8] = []

    /// `true` once the last chunk and the trailer have been read.
    var isComplete: Bool {
        if case .done = state { return true }
        return false
    }

    /// Consumes `input`, handing body bytes to `emit` in order. Returns how many input bytes were
    /// used: fewer than `input.count` only when the body is complete (the rest is not ours).
    mutating func consume(
        _ input: UnsafeRawBufferPointer,
        emit: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int {
        var offset = 0
        while offset < input.count {
            switch state {
            case .done:
                return offset
            case .data(let remaining):
                let count = Int(min(remaining, Int64(input.count - offset)))
                try emit(UnsafeRawBufferPointer(rebasing: input[offset ..< offset + count]))
                offset += count
                state = remaining == Int64(count) ? .dataEnd : .data(remaining: remaining - Int64(count))
            case .size, .dataEnd, .trailer:
                let byte = input[offset]
                offset += 1
                guard byte == 0x0A else {
                    line.append(byte)
                    guard line.count <= Self.maximumLine else { throw Failure.malformed("a chunk line longer than 4 KiB") }
                    continue
                }
                if line.last == 0x0D { line.removeLast() }
                defer { line.removeAll(keepingCapacity: true) }
                try endOfLine()
            }
        }
        return offset
    }

    private mutating func endOfLine() throws(Failure) {
        switch state {
        case .size:
            let digits = line.prefix { $0 != UInt8(ascii: ";") }.filter { $0 != 0x20 && $0 != 0x09 }
            guard !digits.isEmpty else { throw .malformed("an empty chunk size") }
            var size: Int64 = 0
            for digit in digits {
                guard let value = Self.hexValue(digit) else { throw .malformed("a chunk size that is not hexadecimal") }
                let (shifted, overflow) = size.multipliedReportingOverflow(by: 16)
                guard !overflow else { throw .malformed("a chunk size larger than Int64") }
                size = shifted + Int64(value)
            }
            state = size == 0 ? .trailer : .data(remaining: size)
        case .dataEnd:
            guard line.isEmpty else { throw .malformed("chunk data longer than its size") }
            state = .size
        case .trailer:
            if line.isEmpty { state = .done }  // trailer fields are read and ignored
        case .data, .done:
            break
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
