import Dispatch
import Foundation
import Synchronization
import TerminalUI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `cmd | pages`: standard input copied into a file that the pager pages like any other, read as
/// far as the reader goes and no further.
///
/// A pipe cannot be read twice nor seeked in, so what comes through it is kept in a file of its own
/// (`pages-input.PID.ID` in the temporary folder, readable by its owner only, deleted when the
/// pager ends, or by the next one if this one was killed). It is copied ``readAhead`` at a time, as the
/// screen nears the end of what was copied (``want(beyond:by:)``); at the end (G, F) it is read on
/// for as long as the screen stays there, as less does. An endless input (`yes | pages`) costs what
/// was looked at. Copying stops while the file system holding the file has less than ``keptFree``
/// bytes free, and says so.
public final class InputSpool: Sendable {
    /// The file the input is copied into.
    public let path: String
    /// What is copied beyond what was asked for, each time more is.
    public static let readAhead: Int64 = 4 << 20
    /// Copying stops for good (and says so) once the spool's file system has less free than this.
    public static let keptFree: Int64 = 512 << 20

    private struct State {
        /// Bytes the copy may reach before it waits.
        var wanted: Int64 = InputSpool.readAhead
        var copied: Int64 = 0
        var ended = false
        var waiting = false
        /// ``remove()`` was called: the copy ends at its next step.
        var removed = false
        /// The copying thread has returned.
        var copyEnded = false
        var problem: String?
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let changed = Mutex<(@Sendable () -> Void)?>(nil)
    private let keptFree: Int64
    /// What messages call the source ("standard input", a named pipe's path).
    public let name: String

    /// What has been copied, whether the input ended, and why copying stopped if it did.
    public var status: (copied: Int64, ended: Bool, problem: String?) {
        state.withLock { ($0.copied, $0.ended, $0.problem) }
    }

    /// Whether the copy waits for more to be asked for (for tests).
    var isWaitingForDemand: Bool { state.withLock { $0.waiting && !$0.ended } }

    /// Whether the copying thread has returned (for tests).
    var copyHasEnded: Bool { state.withLock { $0.copyEnded } }

    /// Starts copying `source` (a descriptor this takes over) into a new file in `folder`, pausing
    /// while its file system has less than `keptFree` bytes free (``InputSpool/keptFree``).
    /// `name` is what messages call the source: "standard input", or a named pipe's path.
    /// - Throws: ``Failure`` if the file cannot be made.
    public init(
        source: Int32, name: String = "standard input", folder: URL = FileManager.default.temporaryDirectory, keptFree: Int64 = InputSpool.keptFree
    ) throws(Failure) {
        self.keptFree = keptFree
        self.name = name
        Self.removeAbandoned(in: folder)
        path = folder.appendingPathComponent("pages-input.\(getpid()).\(UUID().uuidString)").path
        let spool = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard spool >= 0 else {
            let reason = String(cString: strerror(errno))
            close(source)
            throw Failure(description: "\(name) cannot be kept in \(folder.path) (\(reason)); set TMPDIR to a folder that can be written")
        }
        let thread = Thread { [self] in copy(from: source, to: spool) }
        thread.name = "pages.input"
        thread.start()
    }

    /// Why standard input cannot be paged.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What happened and what to do.
        public let description: String
    }

    /// Calls `body` (on the copying thread) whenever the status changes: a piece copied, the copy
    /// waiting for demand, the input ended.
    public func onChange(_ body: @escaping @Sendable () -> Void) {
        changed.withLock { $0 = body }
    }

    private func tell() {
        changed.withLock { $0 }?()
    }

    /// Asks for the input to be copied to at least `reach` bytes past `bytes` (``readAhead`` by
    /// default). What was asked before stands.
    public func want(beyond bytes: Int64, by reach: Int64 = InputSpool.readAhead) {
        let (wanted, overflow) = max(0, bytes).addingReportingOverflow(max(0, reach))
        raise(to: overflow ? .max : wanted)
    }

    private func raise(to wanted: Int64) {
        let wakeUp = state.withLock { state -> Bool in
            guard wanted > state.wanted else { return false }
            state.wanted = wanted
            defer { state.waiting = false }
            return state.waiting
        }
        if wakeUp { wake.signal() }
    }

    /// Deletes the file and ends the copy (at once if it waits for demand, else after the read
    /// under way).
    public func remove() {
        unlink(path)
        let wakeUp = state.withLock { state -> Bool in
            state.removed = true
            defer { state.waiting = false }
            return state.waiting
        }
        if wakeUp { wake.signal() }
    }

    private func copy(from source: Int32, to spool: Int32) {
        defer {
            close(source)
            close(spool)
            state.withLock { $0.copyEnded = true }
            tell()
        }
        let size = 1 << 20
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let (go, room) = state.withLock { state -> (Bool, Int64) in
                if state.removed { return (false, -1) }
                if state.copied >= state.wanted {
                    state.waiting = true
                    return (false, 0)
                }
                return (true, state.wanted - state.copied)
            }
            if room < 0 { return }  // removed
            if !go {
                tell()
                wake.wait()
                continue
            }
            if let free = Self.freeBytes(spool), free < keptFree {
                stop(with: "stopped reading \(name): \(ByteSize.text(free)) left on the disk that keeps it")
                return
            }
            let count = read(source, buffer, Int(min(Int64(size), room)))
            if count < 0, errno == EINTR { continue }
            if count < 0 {
                stop(with: "\(name) could not be read: \(String(cString: strerror(errno)))")
                return
            }
            if count == 0 {
                state.withLock { $0.ended = true }
                tell()
                return
            }
            var written = 0
            while written < count {
                let done = write(spool, buffer + written, count - written)
                if done < 0, errno == EINTR { continue }
                if done < 0 {
                    stop(with: "\(name) could not be kept: \(String(cString: strerror(errno)))")
                    return
                }
                written += done
            }
            state.withLock { $0.copied += Int64(count) }
            tell()
        }
    }

    private func stop(with problem: String) {
        state.withLock {
            $0.problem = problem
            $0.ended = true
        }
        tell()
    }

    /// Bytes free on the file system of `descriptor` for an unprivileged writer, if it says.
    private static func freeBytes(_ descriptor: Int32) -> Int64? {
        var info = statvfs()
        guard fstatvfs(descriptor, &info) == 0 else { return nil }
        let (free, overflow) = Int64(clamping: info.f_bavail).multipliedReportingOverflow(by: Int64(clamping: info.f_frsize))
        return overflow ? .max : free
    }

    /// Deletes the spools of pagers that ended without deleting theirs (killed).
    static func removeAbandoned(in folder: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where name.hasPrefix("pages-input.") {
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, let pid = Int32(parts[1]), pid > 0, pid != getpid() else { continue }
            if kill(pid, 0) != 0, errno == ESRCH { unlink(folder.appendingPathComponent(name).path) }
        }
    }
}
