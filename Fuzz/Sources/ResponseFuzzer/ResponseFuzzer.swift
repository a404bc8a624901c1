import Foundation
import FuzzDriver
@testable import Avenues

// Feeds arbitrary bytes to what AsyncMedia reads of a server's answer, as libcurl hands it over:
// the bytes up to the first empty line (after any 1xx heads) are header lines, taken a line at a
// time; the rest is the body, in pieces of the sizes the first byte picks, through the decoding of
// the codings the head names. Whatever the bytes, nothing may crash, hang or trap; the file never
// grows past its limit; a file the machine calls whole has exactly the bytes that were written.

let limit: Int64 = 1 << 20
let asked = URL(string: "https://user:secret@example.com:8443/a/b?q=1") ?? URL(fileURLWithPath: "/")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    guard let first = bytes.first else { return 0 }
    let pieceSize = Int(first) + 1
    var parser = HeaderBlockParser()
    var offset = 1
    var head: (status: Int, fields: [HTTPField])?
    // Header lines, up to the final head.
    while offset < bytes.count, head == nil {
        var end = offset
        while end < bytes.count, bytes[end] != 0x0A { end += 1 }
        if end < bytes.count { end += 1 }
        do {
            head = try parser.take(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
        } catch {
            return 0  // refused: fine
        }
        offset = end
    }
    guard let head else { return 0 }
    for field in head.fields where field.name.lowercased() == "retry-after" {
        if let delay = Transfer.delay(retryAfter: field.value) { precondition(delay <= .seconds(86_400) && delay >= .zero, "retry-after \(delay)") }
    }
    // A redirect's target, as a download run reads it: resolved against the URL asked, its origin
    // (which headers it is sent), its canonical form and how it is shown and recorded.
    for field in head.fields where field.name.lowercased() == "location" {
        if let next = URL(string: field.value, relativeTo: asked)?.absoluteURL {
            _ = next.scheme?.lowercased()
            _ = AsyncMedia.origin(of: next)
            _ = try? AsyncMedia.canonical(next)
            _ = RedactedURL.shown(next)
            _ = RedactedURL.recorded(next)
        }
    }
    let resuming: Int64? = first & 1 == 1 ? 100 : nil
    var machine = TransferStateMachine(request: .init(
        url: URL(fileURLWithPath: "/"), resumingFrom: resuming,
        resumeValidator: resuming == nil ? nil : (first & 4 == 4 ? "\"v1\"" : "Wed, 21 Oct 2015 07:28:00 GMT"),
        conditional: first & 2 == 2, revalidatedETag: first & 2 == 2 && resuming == nil ? "W/\"v1\"" : nil,
        maximumSize: limit, transportDecodes: false
    ))
    guard case .readBody(let plan) = machine.head(status: head.status, fields: head.fields) else { return 0 }
    let decoder = ContentDecoder(plan.codings)
    var written: Int64 = 0
    var failed = false
    while offset < bytes.count, !failed {
        let end = min(bytes.count, offset + pieceSize)
        if machine.received(raw: end - offset) != nil { failed = true; break }
        do {
            try decoder.decode(UnsafeRawBufferPointer(rebasing: bytes[offset..<end])) { piece in
                if let error = machine.willWrite(piece.count) { throw error }
                written += Int64(piece.count)
            }
        } catch {
            failed = true
        }
        offset = end
    }
    precondition(written <= limit, "wrote \(written) bytes past the limit")
    guard !failed else { return 0 }
    let decodingError: (any Error)? = (try? decoder.finish()) == nil ? ContentDecoder.Failure.incomplete : nil
    if case .success(.file(let size)) = machine.end(transportError: nil, decodingError: decodingError) {
        let expected = (plan.append ? (resuming ?? 0) : 0) + written
        precondition(size == expected, "a whole file of \(size) bytes after \(written) were written")
        if let total = plan.expectedTotal { precondition(size == total, "a whole file of \(size) bytes, \(total) announced") }
    }
    return 0
}

@_cdecl("ResponseFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv) { start, length in fuzz(start, length) }
}
