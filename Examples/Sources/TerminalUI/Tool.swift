import Avenues
import ArgumentParser
import Foundation

/// A command-line tool of the examples: every way it ends with an error reads the same,
/// `TOOL: what happened; what to do` on standard error and exit status 1 — a bad argument, a
/// folder that is not there, a failure while running.
public protocol Tool: AsyncParsableCommand {
    /// The name errors start with.
    static var toolName: String { get }
}

extension Tool {
    /// Parses the arguments and runs the tool; `--help` and `--version` print as usual.
    public static func main() async {
        await parseAndRun()
    }

    /// A tool's faster path for its commonest call, without ArgumentParser: as ``parseAndRun()``
    /// runs the tool, output checked and written at the end; an error thrown (`ExitCode(130)`
    /// after ^C) is the exit status.
    @MainActor public static func runWithoutParsing(_ body: @MainActor () async throws -> Void) async {
        StandardOutput.start { message in Self.fail(message) }
        do {
            try await body()
            StandardOutput.flush()
        } catch {
            StandardOutput.flush()
            exit(withError: error)
        }
    }

    /// What ``main()`` does; a tool with a faster path for its commonest call falls back to it.
    public static func parseAndRun() async {
        StandardOutput.start { message in Self.fail(message) }
        do {
            var command = try parseAsRoot()
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
            StandardOutput.flush()
        } catch {
            StandardOutput.flush()  // what was printed before the error, then the message
            let code = exitCode(for: error)
            if code == .success { exit(withError: error) }  // help, version: ArgumentParser prints them
            if error is ExitCode { exit(withError: error) }  // a status of its own (130 after ^C), nothing to say
            var message = (toolMessage(for: error) ?? message(for: error)).trimmingCharacters(in: .whitespacesAndNewlines)
            while message.hasSuffix(".") { message.removeLast() }
            if message.first?.isUppercase == true, message.dropFirst().first?.isLowercase == true {
                message = message.prefix(1).lowercased() + message.dropFirst()
            }
            // ArgumentParser's own messages ("Unknown option '--x'") say what happened; say what to do.
            fail(message + (isArgumentError(error) ? "; see '\(toolName) --help'" : ""))
        }
    }

    /// What a library error means to someone running the tool, where the library's own message
    /// speaks to a programmer ("pass a folder with DiskStorage(directory:)").
    static func toolMessage(for error: any Error) -> String? {
        if let error = error as? DiskStorageError, error.reason == .noCacheFolder {
            return "no cache folder: neither XDG_CACHE_HOME nor HOME is set to an absolute path; set one, or give a folder with --cache"
        }
        return nil
    }

    /// Refuses a `--cache` that names something other than a folder (a file, a device): the disk
    /// cache would be silently off (`browse`, `pages`) or fail with a system error (`history`).
    /// A folder that does not exist yet is made when it is first written.
    public static func checkCacheOption(_ path: String?) throws {
        guard let path else { return }
        var isFolder: ObjCBool = false
        if path.isEmpty || (FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) && !isFolder.boolValue) {
            throw ValidationError("--cache \(path.isEmpty ? "(empty text)" : path) is not a folder; give a folder (it is made if missing), or --no-cache.")
        }
    }

    /// `TOOL: message` on standard error (cleaned of control characters: it may quote outside
    /// text), and exit status 1.
    public static func fail(_ message: String) -> Never {
        StandardOutput.flush()  // what was printed comes before the message (a failed flush ends here)
        warn(message)
        Foundation.exit(1)
    }

    /// `TOOL: message` on standard error, as ``fail(_:)`` writes it, without ending the tool.
    public static func warn(_ message: String) {
        var line = TerminalSafe.clean(message.trimmingCharacters(in: .whitespacesAndNewlines))
        while line.hasSuffix(".") { line.removeLast() }  // one style: no sentence period
        // Not FileHandle.write(_:): it traps when standard error cannot be written (a full disk).
        Array((toolName + ": " + line + "\n").utf8).withUnsafeBytes { _ = writeAll(STDERR_FILENO, $0) }
    }

    private static func isArgumentError(_ error: any Error) -> Bool {
        // Errors ArgumentParser raised while parsing, as opposed to ones the tool threw while running.
        let type = String(reflecting: Swift.type(of: error))
        return type.hasPrefix("ArgumentParser.") || error is ValidationError
    }
}
