import Foundation
import Testing
@testable import Avenues

/// The socket transport's parsers, fed what real and hostile servers send.
@Suite("HTTP parsing")
struct HTTPParsingTests {
    func head(_ text: String) throws -> HTTPHead {
        try Array(text.utf8).withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws(HTTPHead.Failure) -> HTTPHead in
            try HTTPHead(parsing: bytes)
        }
    }

    func decode(_ chunks: [String], splitEvery step: Int = 1_000_000) throws -> (body: [UInt8], complete: Bool, used: Int) {
        var decoder = ChunkedBody()
        var body: [UInt8] = []
        let input = Array(chunks.joined().utf8)
        var used = 0
        var offset = 0
        while offset < input.count, !decoder.isComplete {
            let end = min(input.count, offset + step)
            let count = try input[offset..<end].withUnsafeBytes { piece in
                try decoder.consume(piece) { body += $0 }
            }
            used += count
            offset = end
        }
        return (body, decoder.isComplete, used)
    }

    @Test func aHeadFromNginxPythonOrApacheParses() throws {
        let parsed = try head("HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/html\r\nContent-Length: 1234\r\nConnection: close\r\n\r\n")
        #expect(parsed.status == 200 && parsed.version == "HTTP/1.1")
        #expect(parsed.value("content-length") == "1234")
        #expect(try parsed.bodyFraming() == .length(1_234))
        let python = try head("HTTP/1.0 200 OK\nServer: SimpleHTTP/0.6 Python/3.11\nContent-type: text/html; charset=utf-8\n\n")
        #expect(try python.bodyFraming() == .untilClose)
        let chunked = try head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 5\r\n\r\n")
        #expect(try chunked.bodyFraming() == .chunked)  // Transfer-Encoding wins over Content-Length
        #expect(try head("HTTP/1.1 204 No Content\r\n\r\n").bodyFraming() == .none)
        #expect(try head("HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n").bodyFraming() == .none)
    }

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: 12, 13\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Length: 13\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
    ])
    func conflictingOrNonNumericLengthsAreRefused(text: String) throws {
        #expect(throws: HTTPHead.Failure.self) { try head(text).bodyFraming() }
    }

    @Test func repeatedEqualLengthsAreOneLength() throws {
        #expect(try head("HTTP/1.1 200 OK\r\nContent-Length: 7, 7\r\n\r\n").bodyFraming() == .length(7))
    }

    @Test(arguments: [
        "", "garbage\r\n\r\n", "HTTP/2 200\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.1 abc OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\n folded: value\r\n\r\n", "HTTP/1.1 200 OK\r\n: no name\r\n\r\n", "HTTP/1.1 200 OK\r\nbad name: x\r\n\r\n",
    ])
    func malformedHeadsAreRefused(text: String) {
        #expect(throws: HTTPHead.Failure.self) { try head(text) }
    }

    @Test func aHeadLargerThan64KiBIsRefused() {
        let huge = "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 70_000) + "\r\n\r\n"
        #expect(throws: HTTPHead.Failure.tooLarge) { try head(huge) }
    }

    @Test func theEndOfAHeadIsFoundWithCRLFOrLF() {
        #expect(Array("HTTP/1.1 200 OK\r\nA: b\r\n\r\nBODY".utf8).withUnsafeBytes { HTTPHead.end(in: $0) } == 25)
        #expect(Array("HTTP/1.0 200 OK\nA: b\n\nBODY".utf8).withUnsafeBytes { HTTPHead.end(in: $0) } == 22)
        #expect(Array("HTTP/1.1 200 OK\r\nA: b\r\n".utf8).withUnsafeBytes { HTTPHead.end(in: $0) } == nil)
    }

    @Test(arguments: [1, 2, 3, 7, 1_000])
    func chunkedBodiesDecodeWhateverTheReadSizes(step: Int) throws {
        let (body, complete, used) = try decode(["5;ext=1\r\nhello\r\n", "7\r\n, world\r\n", "0\r\nTrailer: x\r\n\r\n", "NEXT"], splitEvery: step)
        #expect(String(decoding: body, as: UTF8.self) == "hello, world")
        #expect(complete)
        #expect(used == 45)  // the 4 bytes after the body are not consumed
    }

    @Test(arguments: [
        "zz\r\nhello\r\n0\r\n\r\n",                  // not hexadecimal
        "\r\nhello\r\n",                            // empty size
        "8000000000000000\r\n",                     // larger than Int64
        "5\r\nhelloEXTRA\r\n0\r\n\r\n",             // data longer than its size
        String(repeating: "1", count: 5_000) + "\r\n",  // a size line over 4 KiB
    ])
    func malformedChunkedBodiesFail(text: String) {
        #expect(throws: ChunkedBody.Failure.self) { try decode([text]) }
    }

    @Test func requestHeadsNeverCarryInjectedLines() {
        let url = URL(string: "http://example.com:8080/a%20b/c?q=1&r=%2F#frag")!
        let head = SocketTransport.request(for: url, host: "example.com", port: 8080, headers: [
            ("X-Token", "abc"), ("X-Evil", "a\r\nInjected: yes"), ("X-Lf", "a\nInjected: too"), ("Bad Name", "x"),
            ("Range", "bytes=0-1"), ("Host", "other"),
        ])
        #expect(head.hasPrefix("GET /a%20b/c?q=1&r=%2F HTTP/1.1\r\nHost: example.com:8080\r\n"))
        #expect(head.contains("X-Token: abc\r\n"))
        #expect(!head.contains("Injected") && !head.contains("Range") && !head.contains("Host: other") && !head.contains("Bad Name"))
        #expect(head.contains("Accept-Encoding: identity\r\n") && head.hasSuffix("\r\n\r\n"))
    }
}
