import Foundation
import Testing
@testable import Avenues

/// `FileSystem.writeAll` of one buffer, through a stand-in for `write(2)`: every byte is written in
/// order whatever the short writes and interruptions, and a write that writes nothing is an error
/// instead of a loop for ever.
@Suite("FileSystem.writeAll")
struct FileSystemWriteTests {
    /// A `write(2)` that answers from a script, one answer per call: a count to take (at most what
    /// is asked), `-1` with `errno` set, or `0`. Past the script it fails with `ENOSPC`, so a loop
    /// that never stops ends the test with the wrong error instead of hanging it.
    final class ScriptedWrite {
        enum Step { case take(Int), interrupted, nothing, fail(Int32) }
        var steps: [Step]
        var written: [UInt8] = []
        var calls = 0

        init(_ steps: [Step]) { self.steps = steps }

        func write(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
            calls += 1
            guard !steps.isEmpty else {
                errno = ENOSPC
                return -1
            }
            switch steps.removeFirst() {
            case .take(let wanted):
                let taken = min(wanted, count)
                if let bytes { written += UnsafeRawBufferPointer(start: bytes, count: taken) }
                return taken
            case .interrupted:
                errno = EINTR
                return -1
            case .nothing:
                return 0
            case .fail(let code):
                errno = code
                return -1
            }
        }
    }

    private static let bytes = Array((0..<100).map { UInt8($0) })

    @Test func shortWritesAndInterruptionsWriteEveryByteInOrder() throws {
        let script = ScriptedWrite([.take(1), .interrupted, .take(40), .interrupted, .interrupted, .take(1_000)])
        try Self.bytes.withUnsafeBytes { buffer in
            try FileSystem.writeAll(7, buffer, path: "/tmp/x", through: script.write)
        }
        #expect(script.written == Self.bytes)
        #expect(script.calls == 6)
    }

    @Test func aWriteThatWritesNothingIsAnIOErrorNamingThePath() {
        let script = ScriptedWrite([.take(30)] + Array(repeating: .nothing, count: 10_000))
        #expect {
            try Self.bytes.withUnsafeBytes { buffer in
                try FileSystem.writeAll(7, buffer, path: "/tmp/cache/file", through: script.write)
            }
        } throws: { error in
            guard let failure = error as? FileSystem.Failure else { return false }
            return failure.code == EIO && failure.call == "write" && failure.path == "/tmp/cache/file"
        }
        // The first write that wrote nothing stopped it: one call, not a loop.
        #expect(script.calls == 2)
        #expect(script.written == Array(Self.bytes.prefix(30)))
    }

    @Test func aFailingWriteIsThrownWithItsCode() {
        let script = ScriptedWrite([.take(10), .fail(ENOSPC)])
        #expect {
            try Self.bytes.withUnsafeBytes { buffer in
                try FileSystem.writeAll(7, buffer, path: "/tmp/full", through: script.write)
            }
        } throws: { error in
            (error as? FileSystem.Failure).map { $0.code == ENOSPC && $0.path == "/tmp/full" } ?? false
        }
        #expect(script.calls == 2)
    }

    @Test func nothingToWriteCallsNothing() throws {
        let script = ScriptedWrite([])
        try [UInt8]().withUnsafeBytes { buffer in
            try FileSystem.writeAll(7, buffer, path: "/tmp/x", through: script.write)
        }
        #expect(script.calls == 0)
    }
}
