import FoundationEssentials
import Glibc
import MirrorKit
import Synchronization

/// Every line mirror writes, on standard output or standard error, goes through here, and so does
/// the live progress display: one lock orders them, so a log line never lands in the middle of a
/// redraw. The display is cleared before any other line and drawn again at the next redraw (a
/// quarter of a second later at most), so a burst of lines (`--verbose`) does not make it flicker.
///
/// URLs, file names, feed titles and servers' messages come from strangers: text lines are escaped
/// once, at the last step (``escapedForTerminal``), and JSON lines escape the same characters as
/// `\u` sequences, so neither can steer a terminal.
enum Console {
    private struct State {
        var format = LogFormat.text
        /// The progress lines on the screen now, as drawn.
        var drawn: [String] = []
        var progressActive = false
    }

    private static let state = Mutex(State())

    /// How standard error's lines are written from now on.
    static func use(_ format: LogFormat) {
        state.withLock { $0.format = format }
    }

    static var format: LogFormat { state.withLock { $0.format } }

    /// One line on standard output.
    static func print(_ line: String) {
        write(line.escapedForTerminal + "\n", to: STDOUT_FILENO)
    }

    /// A JSON document on standard output. Characters that steer a terminal can stand only inside
    /// its strings, where `\u` escapes say the same: they are written so.
    static func printJSON(_ json: String) {
        write(JSONLine.escapingDisplayControls(json) + "\n", to: STDOUT_FILENO)
    }

    /// One line on standard error, as it is (already formatted, a JSON object say).
    static func printErrorLine(_ line: String) {
        write(line + "\n", to: STDERR_FILENO)
    }

    /// One error on standard error: `mirror: …` as text, or a JSON object.
    static func printError(_ line: String) {
        switch format {
        case .text: printErrorLine(line.escapedForTerminal)
        case .json: printErrorLine(JSONLine.encode(level: "error", message: line.hasPrefix("mirror: ") ? String(line.dropFirst(8)) : line, fields: [:]))
        }
    }

    /// Every line mirror prints passes here: a URL's userinfo (a private feed's password) is
    /// shown as `***` whatever the line, the last guard behind the sources' own redaction.
    private static func write(_ text: String, to descriptor: Int32) {
        let text = URLUserinfo.redacting(in: text)
        state.withLock { state in
            if !state.drawn.isEmpty { writeAll(erasing(&state), to: STDERR_FILENO) }
            writeAll(text, to: descriptor)
        }
    }

    // MARK: - Progress

    /// Starts drawing progress on standard error.
    static func beginProgress() {
        state.withLock { $0.progressActive = true }
    }

    /// Replaces the progress lines with `lines` (cut to the terminal's width here), in one write.
    static func showProgress(_ lines: [String]) {
        state.withLock { state in
            guard state.progressActive else { return }
            let columns = columns()
            let cut = lines.map { TerminalText.clip(URLUserinfo.redacting(in: $0), toColumns: columns - 1) }
            writeAll(erasing(&state) + cut.joined(separator: "\n"), to: STDERR_FILENO)
            state.drawn = cut
        }
    }

    /// Clears the progress lines for good: what follows is the run's report.
    static func endProgress() {
        state.withLock { state in
            guard state.progressActive else { return }
            writeAll(erasing(&state), to: STDERR_FILENO)
            state.progressActive = false
        }
    }

    /// Folders removed by ``exitNow(_:)``, which runs no deinit: a dry run's scratch copy.
    private static let removedOnExit = Mutex<[String]>([])

    static func removeOnExit(_ path: String) {
        removedOnExit.withLock { $0.append(path) }
    }

    /// Ends the process at once with `status` (a second signal), clearing the progress lines first.
    /// It exits holding the lock, so no redraw can follow; a lock held elsewhere for more than
    /// 50 ms (a write blocked on a stopped terminal) is not waited for: the shell's prompt then
    /// starts on a fresh line.
    static func exitNow(_ status: Int32) -> Never {
        for path in removedOnExit.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        for _ in 0..<50 {
            _ = state.withLockIfAvailable { state -> Never in
                writeAll(erasing(&state), to: STDERR_FILENO)
                _exit(status)
            }
            usleep(1000)
        }
        writeAll("\n", to: STDERR_FILENO)
        _exit(status)
    }

    /// Columns of standard error's terminal now (80 when it says nothing).
    static func columns() -> Int {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// What moves to the first progress line and clears from there down ("" when none is drawn).
    ///
    /// A terminal made narrower since the lines were drawn has rewrapped each over several rows,
    /// as VTE (GNOME Terminal), kitty, iTerm2, Windows Terminal and tmux do: those rows are climbed
    /// too (the lines are ASCII, so their width is their length). A terminal that cuts lines
    /// instead of rewrapping them (xterm) loses as many rows above the display as it gained.
    private static func erasing(_ state: inout State) -> String {
        guard !state.drawn.isEmpty else { return "" }
        let columns = columns()
        let rows = state.drawn.reduce(0) { total, line in
            total + max(1, (TerminalText.width(line) + columns - 1) / columns)
        }
        state.drawn = []
        return "\r" + (rows > 1 ? "\u{1B}[\(rows - 1)A" : "") + "\u{1B}[J"
    }

    private static func writeAll(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }
            bytes = bytes.dropFirst(written)
        }
    }
}
