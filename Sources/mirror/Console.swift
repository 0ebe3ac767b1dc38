import Foundation
import MirrorKit
import Synchronization

/// Every line mirror writes, on standard output or standard error, goes through here, and so does
/// the live progress display: one lock orders them, so a log line never lands in the middle of a
/// redraw. The display is cleared before any other line and drawn again after it.
///
/// URLs, file names, feed titles and servers' messages come from strangers: text lines are escaped
/// once, at the last step (``escapedForTerminal``), and JSON lines escape the same characters as
/// `\u` sequences, so neither can steer a terminal.
enum Console {
    private struct State {
        var format = LogFormat.text
        /// The progress lines on the screen now, as drawn, and the width they were cut to.
        var drawn: [String] = []
        var drawnColumns = 0
        /// The lines to put back after a log line.
        var latest: [String] = []
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

    /// One message on standard error: `mirror: …` as text, or a JSON object.
    static func printError(_ line: String, level: String = "error") {
        switch format {
        case .text: printErrorLine(line.escapedForTerminal)
        case .json: printErrorLine(JSONLine.encode(level: level, message: line.hasPrefix("mirror: ") ? String(line.dropFirst(8)) : line, fields: [:]))
        }
    }

    private static func write(_ text: String, to descriptor: Int32) {
        state.withLock { state in
            let restore = state.progressActive && !state.drawn.isEmpty
            if restore { erase(&state) }
            writeAll(text, to: descriptor)
            if restore { draw(state.latest, in: &state) }
        }
    }

    // MARK: - Progress

    /// Starts drawing progress on standard error.
    static func beginProgress() {
        state.withLock { $0.progressActive = true }
    }

    /// Replaces the progress lines with `lines` (cut to the terminal's width here).
    static func showProgress(_ lines: [String]) {
        state.withLock { state in
            guard state.progressActive else { return }
            state.latest = lines
            erase(&state)
            draw(lines, in: &state)
        }
    }

    /// Clears the progress lines for good: what follows is the run's report.
    static func endProgress() {
        state.withLock { state in
            guard state.progressActive else { return }
            erase(&state)
            state.progressActive = false
        }
    }

    /// Columns of standard error's terminal now (80 when it says nothing).
    static func columns() -> Int {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    private static func draw(_ lines: [String], in state: inout State) {
        let columns = columns()
        let cut = lines.map { TerminalText.clip($0, toColumns: columns - 1) }
        guard !cut.isEmpty else { return }
        writeAll(cut.joined(separator: "\n"), to: STDERR_FILENO)
        state.drawn = cut
        state.drawnColumns = columns
    }

    /// Moves to the first progress line and clears from there down. A terminal made narrower since
    /// the lines were drawn may have wrapped each over several rows: those rows are climbed too.
    private static func erase(_ state: inout State) {
        guard !state.drawn.isEmpty else { return }
        let columns = columns()
        let rows = state.drawn.reduce(0) { total, line in
            let width = TerminalText.width(line)
            return total + max(1, (width + columns - 1) / columns)
        }
        var sequence = "\r"
        if rows > 1 { sequence += "\u{1B}[\(rows - 1)A" }
        sequence += "\u{1B}[J"
        writeAll(sequence, to: STDERR_FILENO)
        state.drawn = []
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
