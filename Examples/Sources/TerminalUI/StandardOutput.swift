import CSystemIO
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a tool prints when it draws no screen (`browse DIR > file`, `history | head`): buffered
/// (written 4 KiB at a time, as C's standard output is to a pipe or a file), and every write
/// checked. A write that fails — a full disk, a pipe closed while SIGPIPE is ignored — ends the
/// tool at once: "TOOL: standard output could not be written (No space left on device); …", status
/// 1. `print` dropped such errors (`browse DIR > /dev/full` exited 0, having written nothing), and
/// Foundation's `FileHandle.write(_:)` traps on them (`history > /dev/full` crashed).
public enum StandardOutput {
    /// Bytes not yet written.
    private static let pending = Mutex<[UInt8]>([])
    /// How many bytes are kept before they are written.
    static let bufferSize = 4_096
    /// Whether standard output is a terminal (`browse DIR < /dev/null`): then each write goes out
    /// at once, as C's standard output is line-buffered on a terminal, so rows show as they come.
    private static let immediate = isatty(STDOUT_FILENO) == 1
    /// What ends the tool when a write fails: ``start(failingWith:)`` sets it.
    static let failure = Mutex<(@Sendable (String) -> Never)?>(nil)
    /// Whether descriptor 1 was closed when the tool started (`tool >&-`): every write fails.
    private static let closedAtStart = Mutex(false)

    /// Sets up a tool's output before it runs: `fail` ends the tool when a write fails. Standard
    /// descriptors closed at start (`tool >&-`, `2>&-`, `<&-`) were given /dev/null before main, so
    /// that no file the tool opens takes their number (output meant for a closed standard output
    /// went into whatever was opened next); a closed standard output fails the first write, as
    /// "Bad file descriptor".
    public static func start(failingWith fail: @escaping @Sendable (String) -> Never) {
        failure.withLock { $0 = fail }
        // Given /dev/null before main (CSystemIO): by now the runtime has opened files.
        let closed = avenues_examples_closed_standard_descriptors() & (1 << STDOUT_FILENO) != 0
        closedAtStart.withLock { $0 = closed }
    }

    /// Where bytes go instead of standard output (tests): returns `errno` of a failed write, or 0.
    static let sink = Mutex<(@Sendable (UnsafeRawBufferPointer) -> Int32)?>(nil)

    /// `text` and a newline.
    public static func line(_ text: String) {
        var line = text + "\n"
        line.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// `bytes` as they are.
    public static func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    /// `data` as it is.
    public static func write(_ data: Data) {
        data.withUnsafeBytes { write($0) }
    }

    /// `bytes` as they are: kept while what is kept stays under ``bufferSize``; otherwise what is
    /// kept is written, then `bytes` (a large piece without a copy).
    public static func write(_ bytes: UnsafeRawBufferPointer) {
        let immediate = Self.immediate && sink.withLock { $0 == nil }  // tests keep their buffer
        let kept = pending.withLock { pending -> [UInt8]? in
            if pending.count + bytes.count < bufferSize, !immediate {
                pending.append(contentsOf: bytes)
                return nil
            }
            defer { pending = [] }
            return pending
        }
        guard let kept else { return }
        if !kept.isEmpty { kept.withUnsafeBytes { send($0) } }
        if !bytes.isEmpty { send(bytes) }
    }

    /// Writes what is kept. ``Tool/parseAndRun()`` calls it when the tool's work ends, and
    /// ``Tool/fail(_:)`` before its message.
    public static func flush() {
        let kept = pending.withLock { pending -> [UInt8] in
            defer { pending = [] }
            return pending
        }
        if !kept.isEmpty { kept.withUnsafeBytes { send($0) } }
    }

    private static func send(_ bytes: UnsafeRawBufferPointer) {
        // Sent outside the lock: a pipe whose reader is slow blocks here, and other threads may
        // keep adding lines meanwhile.
        let code = closedAtStart.withLock { $0 } ? EBADF : sink.withLock { $0 }.map { $0(bytes) } ?? writeAll(STDOUT_FILENO, bytes)
        guard code != 0 else { return }
        let advice = code == ENOSPC ? "free some space, or send the output elsewhere" : code == EBADF ? "it is closed; send it to a file or a pipe" : "check where the output goes"
        let message = "standard output could not be written (\(String(cString: strerror(code)))); \(advice)"
        if let fail = failure.withLock({ $0 }) { fail(message) }
        Array((message + "\n").utf8).withUnsafeBytes { _ = writeAll(STDERR_FILENO, $0) }
        exit(1)
    }
}

/// Writes all of `bytes` to `descriptor`, again after a signal and after a partial write; returns
/// `errno` of the write that failed, or 0.
func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
    avenues_examples_write_all(descriptor, bytes.baseAddress, bytes.count)
}
