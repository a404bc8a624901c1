import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#else
#error("Unsupported platform: Avenues needs Darwin, Glibc or Musl")
#endif

/// The process's terminal: whether there is one, its size, key input, and a mode for interactive
/// programs that is always undone — on a normal exit, Ctrl-C, SIGTERM/SIGHUP, or a crash.
public enum Terminal {
    /// ANSI sequences the examples use.
    public enum ANSI {
        public static let enterAlternateScreen = "\u{1B}[?1049h"
        public static let leaveAlternateScreen = "\u{1B}[?1049l"
        public static let hideCursor = "\u{1B}[?25l"
        public static let showCursor = "\u{1B}[?25h"
        public static let home = "\u{1B}[H"
        public static let clearLine = "\u{1B}[2K"
        public static let reset = "\u{1B}[0m"
        public static let inverse = "\u{1B}[7m"
        public static let bold = "\u{1B}[1m"
        public static let dim = "\u{1B}[2m"
        public static let red = "\u{1B}[31m"
        public static let green = "\u{1B}[32m"
        public static let yellow = "\u{1B}[33m"
        public static let blue = "\u{1B}[34m"
        public static let magenta = "\u{1B}[35m"
        public static let cyan = "\u{1B}[36m"
        public static let clearToEnd = "\u{1B}[J"
    }

    /// Colours for what the lists show, as tig and ranger use them; all empty (no colour) when
    /// `NO_COLOR` is set (https://no-color.org) or standard output is not a terminal.
    public struct Palette: Sendable {
        public let date: String
        public let author: String
        public let hash: String
        public let ref: String
        public let size: String
        public let folder: String
        public let failure: String
        public let match: String
        public let added: String
        public let removed: String
        public let header: String
        public let reset: String

        /// Whether colours are on.
        public var isOn: Bool { !reset.isEmpty }

        /// The palette for this process's standard output.
        public static var current: Palette {
            // getenv, not ProcessInfo's environment: that copies every variable into a dictionary,
            // a tenth of the first screen's instructions.
            let noColor = getenv("NO_COLOR").map { $0.pointee != 0 } ?? false
            return Palette(on: !noColor && Terminal.isTerminal(STDOUT_FILENO))
        }

        /// Colours on, or all empty.
        public init(on: Bool) {
            func color(_ code: String) -> String { on ? code : "" }
            date = color(ANSI.blue)
            author = color(ANSI.green)
            hash = color(ANSI.yellow)
            ref = color(ANSI.bold + ANSI.cyan)
            size = color(ANSI.cyan)
            folder = color(ANSI.bold + ANSI.blue)
            failure = color(ANSI.red)
            match = color(ANSI.bold + ANSI.yellow)
            added = color(ANSI.green)
            removed = color(ANSI.red)
            header = color(ANSI.bold + ANSI.magenta)
            reset = color(ANSI.reset)
        }

        /// `text` in `color`, or as it is when colours are off.
        public func paint(_ text: String, _ color: String) -> String {
            color.isEmpty || text.isEmpty ? text : color + text + reset
        }
    }

    /// Something that happened at the terminal.
    public enum Event: Sendable {
        case key(Key)
        /// The window changed size.
        case resize
    }

    /// `true` if `descriptor` (standard output by default) is a terminal.
    public static func isTerminal(_ descriptor: Int32 = STDOUT_FILENO) -> Bool {
        isatty(descriptor) == 1
    }

    /// The width of rows printed as plain text: `given` (a `--width` option), else the terminal's
    /// when standard output is one, else `$COLUMNS`, else 120.
    public static func plainTextWidth(_ given: Int?) -> Int {
        // COLUMNS comes from the environment: one that is no width (0, -5) is not taken; it made
        // every row a lone "…".
        given ?? size()?.columns ?? ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init).flatMap { $0 >= 1 ? $0 : nil } ?? 120
    }

    /// The window size in columns and rows, if standard output is a terminal.
    public static func size() -> (columns: Int, rows: Int)? {
        var window = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &window) == 0, window.ws_col > 0, window.ws_row > 0 else { return nil }
        return (Int(window.ws_col), Int(window.ws_row))
    }

    /// Writes `text` to standard output at once (no buffering) — unless the terminal was given back
    /// (``restore()``) and not taken again: a frame another thread draws while a signal ends the
    /// program must not land on the main screen after it (CI's tmux test, SIGHUP: a half-drawn row
    /// on the shell's screen).
    public static func write(_ text: String) {
        output.withLock { open in
            guard open, !FatalSignals.ending.load(ordering: .relaxed) else { return }
            emit(text)
        }
    }

    /// Whether frames may be written: closed by ``restore()``, opened again when the terminal is
    /// taken. A write holds it, so the one that gives the terminal back waits for a frame under way.
    private static let output = Mutex(true)
    /// Where output goes instead of standard output (tests).
    static let sink = Mutex<(@Sendable ([UInt8]) -> Void)?>(nil)

    /// Opens the output, writing `entering` first (the alternate screen, a hidden cursor).
    static func openOutput(entering: String) {
        output.withLock { open in
            open = true
            emit(entering)
        }
    }

    /// Writes `leaving` (the main screen, a visible cursor) after any frame under way, and closes
    /// the output: later frames are dropped until it is opened again.
    static func closeOutput(leaving: String) {
        output.withLock { open in
            open = false
            emit(leaving)
        }
    }

    private static func emit(_ text: String) {
        guard !text.isEmpty else { return }
        if let sink = sink.withLock({ $0 }) {
            sink(Array(text.utf8))
            return
        }
        var text = text
        text.withUTF8 { _ = writeAll(STDOUT_FILENO, UnsafeRawBufferPointer($0)) }  // a failure: the terminal is gone, nothing to do
    }

    // MARK: Interactive mode

    private struct Saved: @unchecked Sendable {  // termios is plain data; only touched under `session`
        var attributes: termios
        var fullScreen: Bool
    }

    private static let session = Mutex<Saved?>(nil)
    /// The source reading keys, suspended while a child program has the terminal.
    private static let input = Mutex<SourceBox?>(nil)

    /// Puts the terminal in cbreak mode (keys arrive one by one, not echoed; Ctrl-C is a key) and,
    /// when `fullScreen`, switches to the alternate screen with the cursor hidden. Everything is
    /// undone by ``restore()``, which also runs on exit, on every signal that ends the process
    /// (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE, …) and on a crash.
    ///
    /// The terminal's events come from ``events()``, started apart so that a program can draw
    /// before the threads that serve them exist.
    ///
    /// - Returns: `false` if standard input is not a terminal (nothing was changed).
    public static func takeOver(fullScreen: Bool) -> Bool {
        var attributes = termios()
        guard tcgetattr(STDIN_FILENO, &attributes) == 0 else { return false }
        session.withLock { $0 = Saved(attributes: attributes, fullScreen: fullScreen) }
        FatalSignals.install(attributes: attributes, fullScreen: fullScreen)
        atexit { Terminal.restore() }

        enterInteractive(attributes, fullScreen: fullScreen)
        return true
    }

    /// After ``takeOver(fullScreen:)``: the terminal's events (keys from standard input, window
    /// resizes), with the signals that end or stop the program handled on a queue of their own.
    /// SIGTSTP (`kill -TSTP`, or a shell's job control) restores the terminal, stops, and on SIGCONT
    /// takes it again and reports a resize, so the screen is drawn anew.
    public static func events() -> AsyncStream<Event> {
        let (events, continuation) = AsyncStream<Event>.makeStream()
        let queue = DispatchQueue(label: "terminal-input")
        let input = DispatchSource.makeReadSource(fileDescriptor: STDIN_FILENO, queue: queue)
        let decoder = Mutex((keys: KeyDecoder(), reads: 0))
        input.setEventHandler {
            var buffer = [UInt8](repeating: 0, count: 256)
            let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            guard count > 0 else {
                if count == 0 { continuation.finish() }  // end of input
                return
            }
            let (keys, waiting, readNumber) = decoder.withLock { state in
                state.reads &+= 1
                return (state.keys.decode(buffer.prefix(count)), state.keys.isWaiting, state.reads)
            }
            for key in keys { continuation.yield(.key(key)) }
            // Esc alone, or a sequence cut short: if nothing follows within 30 ms (what vim waits,
            // ttimeoutlen), it was typed as it is.
            if waiting {
                queue.asyncAfter(deadline: .now() + .milliseconds(30)) {
                    let flushed = decoder.withLock { state in state.reads == readNumber ? state.keys.flush() : [] }
                    for key in flushed { continuation.yield(.key(key)) }
                }
            }
        }
        input.resume()
        Self.input.withLock { $0 = SourceBox([input]) }

        var sources = [input as any DispatchSourceProtocol]
        signal(SIGWINCH, SIG_IGN)
        let resize = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: queue)
        resize.setEventHandler { continuation.yield(.resize) }
        resize.resume()
        sources.append(resize)
        // A signal ignored when the program started stays ignored, as shells and POSIX tools leave
        // it: `nohup` ignores SIGHUP, a non-interactive shell's `&` SIGINT (and SIGQUIT).
        for number in [SIGTERM, SIGINT, SIGHUP] where !SignalsAtStart.ignored.contains(number) {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                restore()
                exit(128 + number)
            }
            source.resume()
            sources.append(source)
        }
        // Stopped by job control: give the terminal back, stop, and take it again when continued.
        // Not where SIGTSTP was ignored at start (no job control): nobody would continue it.
        if !SignalsAtStart.ignored.contains(SIGTSTP) {
            signal(SIGTSTP, SIG_IGN)
            let suspend = DispatchSource.makeSignalSource(signal: SIGTSTP, queue: queue)
            suspend.setEventHandler {
                guard let saved = session.withLock({ $0 }) else { return }
                restore()
                signal(SIGTSTP, SIG_DFL)
                raise(SIGTSTP)  // stops here until SIGCONT
                signal(SIGTSTP, SIG_IGN)
                session.withLock { $0 = saved }
                enterInteractive(saved.attributes, fullScreen: saved.fullScreen)
                continuation.yield(.resize)
            }
            suspend.resume()
            sources.append(suspend)
        }
        let retained = SourceBox(sources)
        continuation.onTermination = { _ in retained.cancel() }
        return events
    }

    /// cbreak mode (and the alternate screen, the cursor hidden) from the saved `attributes`.
    private static func enterInteractive(_ attributes: termios, fullScreen: Bool) {
        var raw = attributes
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw)
        openOutput(entering: fullScreen ? ANSI.enterAlternateScreen + ANSI.hideCursor + ANSI.home : "")
    }

    /// Runs `executable` with `arguments` in the foreground with the terminal as it was before
    /// ``takeOver(fullScreen:)`` (keys go to it, not to this program), waits for it, then
    /// takes the terminal back. Returns its exit status, or `nil` if it could not start.
    @discardableResult
    public static func runInForeground(_ executable: URL, arguments: [String], environment: [String: String]? = nil) -> Int32? {
        guard let saved = session.withLock({ $0 }) else { return nil }
        let reader = input.withLock { $0 }
        reader?.suspend()
        restore()
        defer {
            session.withLock { $0 = saved }
            enterInteractive(saved.attributes, fullScreen: saved.fullScreen)
            reader?.resume()
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardInput = FileHandle.standardInput
        process.standardOutput = FileHandle.standardOutput
        process.standardError = FileHandle.standardError
        guard (try? process.run()) != nil else { return nil }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Undoes ``takeOver(fullScreen:)``: the saved terminal modes, the main screen and a
    /// visible cursor. Safe to call more than once.
    public static func restore() {
        guard let saved = session.withLock({ state -> Saved? in
            defer { state = nil }
            return state
        }) else { return }
        closeOutput(leaving: saved.fullScreen ? ANSI.reset + ANSI.showCursor + ANSI.leaveAlternateScreen : "")
        var attributes = saved.attributes
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &attributes)
    }

    /// Keeps dispatch sources alive for as long as the event stream is.
    // Safe: dispatch sources are thread-safe objects, and the array is never changed after init.
    private final class SourceBox: @unchecked Sendable {
        private let sources: [any DispatchSourceProtocol]
        init(_ sources: [any DispatchSourceProtocol]) { self.sources = sources }
        func cancel() { for source in sources { source.cancel() } }
        func suspend() { for source in sources { source.suspend() } }
        func resume() { for source in sources { source.resume() } }
    }
}

/// The signals whose action was "ignore" when the program started (read before the terminal's set-up
/// changes any): a parent that ignores one — `nohup` SIGHUP, a shell's `&` SIGINT and SIGQUIT, a
/// test SIGXFSZ — means it to stay ignored, and a handler of ours would end the program on it.
enum SignalsAtStart {
    static let ignored: Set<Int32> = {
        var ignored = Set<Int32>()
        for number in Int32(1) ..< 32 {
            var action = sigaction()
            guard sigaction(number, nil, &action) == 0 else { continue }
            #if canImport(Glibc)
            let handler = action.__sigaction_handler.sa_handler
            #else
            let handler = action.__sigaction_u.__sa_handler
            #endif
            // SIG_IGN is the handler whose address is 1.
            if action.sa_flags & Int32(truncatingIfNeeded: SA_SIGINFO) == 0, unsafeBitCast(handler, to: Int.self) == 1 { ignored.insert(number) }
        }
        return ignored
    }()
}

/// A crash, or a signal whose default action ends the process, must not leave the terminal in
/// cbreak mode on the alternate screen. A signal handler can only use async-signal-safe calls on
/// memory prepared beforehand, so the bytes to write and the modes to restore are stored here
/// before the handlers are installed; each handler restores, then lets the default action happen.
private enum FatalSignals {
    nonisolated(unsafe) static var attributes = termios()  // written once, before the handlers exist
    nonisolated(unsafe) static var farewell: UnsafeMutableBufferPointer<UInt8>?  // idem

    static func install(attributes: termios, fullScreen: Bool) {
        Self.attributes = attributes
        let text = fullScreen ? Array((Terminal.ANSI.reset + Terminal.ANSI.showCursor + Terminal.ANSI.leaveAlternateScreen).utf8) : []
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(1, text.count))
        _ = buffer.initialize(from: text)
        farewell = UnsafeMutableBufferPointer(rebasing: buffer[0..<text.count])
        // Every signal whose default action ends the process (SIGTERM, SIGINT and SIGHUP are
        // handled in order by dispatch sources instead, SIGTSTP too).
        var ending = [
            SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGABRT, SIGFPE, SIGSYS, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE,
            SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ,
        ]
        #if os(Linux)
        ending += [SIGPOLL, SIGSTKFLT]
        #endif
        for number in ending where !SignalsAtStart.ignored.contains(number) {
            var action = sigaction()
            #if canImport(Glibc)
            action.__sigaction_handler.sa_handler = { number in FatalSignals.handle(number) }
            #else
            action.__sigaction_u.__sa_handler = { number in FatalSignals.handle(number) }
            #endif
            action.sa_flags = Int32(truncatingIfNeeded: SA_RESETHAND)  // the default action takes over after this one
            sigaction(number, &action, nil)
        }
    }

    /// Set first by a fatal signal's handler (an atomic store is async-signal-safe; a lock is not):
    /// frames are no longer written, best effort — one under way may still finish.
    static let ending = Atomic(false)

    static func handle(_ number: Int32) {
        ending.store(true, ordering: .relaxed)
        if let farewell, let base = farewell.baseAddress, farewell.count > 0 {
            _ = write(STDOUT_FILENO, base, farewell.count)
        }
        tcsetattr(STDIN_FILENO, TCSANOW, &attributes)
        raise(number)
    }
}
