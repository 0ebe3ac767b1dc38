import Foundation
import Synchronization
@testable import MirrorKit

/// Runs the real `mirror` with a pseudo-terminal of the test's own as its standard output and
/// error, as a person's shell would, and records every byte it draws. The terminal's width can
/// be changed while it runs, as a person resizing the window would.
final class PseudoTerminal: Sendable {
    struct Run {
        var status: Int32
        /// Everything written to the terminal, with the columns it had when it was read.
        var chunks: [(columns: Int, bytes: [UInt8])]

        var output: String { String(decoding: chunks.flatMap(\.bytes), as: UTF8.self) }
    }

    private let master: Int32
    private let slave: Int32
    private let state = Mutex<(columns: Int, chunks: [(columns: Int, bytes: [UInt8])])>((0, []))

    init(columns: Int, rows: Int = 24) throws {
        // posix_openpt and friends need _XOPEN_SOURCE, which Swift's Glibc does not define: the
        // ioctls they wrap instead (Linux's generic numbers: TIOCSPTLCK, TIOCGPTN).
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard master >= 0, ioctl(master, 0x4004_5431, &unlock) == 0, ioctl(master, 0x8004_5430, &number) == 0 else {
            throw POSIXError(.ENODEV)
        }
        slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard slave >= 0 else { throw POSIXError(.ENODEV) }
        resize(columns: columns, rows: rows)
    }

    deinit {
        close(master)
    }

    /// Sets the terminal's size. Done between two reads, so the bytes read before were drawn at
    /// the old width.
    func resize(columns: Int, rows: Int = 24) {
        state.withLock { state in
            var size = winsize(ws_row: UInt16(rows), ws_col: UInt16(columns), ws_xpixel: 0, ws_ypixel: 0)
            _ = ioctl(master, UInt(TIOCSWINSZ), &size)
            state.columns = columns
        }
    }

    var output: String { String(decoding: state.withLock { $0.chunks.flatMap(\.bytes) }, as: UTF8.self) }

    /// Runs `mirror arguments` on the terminal; `during` runs meanwhile (to resize it, or signal
    /// the process whose id it gets).
    func run(
        _ arguments: [String], environment: [String: String] = [:],
        during: @escaping @Sendable (PseudoTerminal, pid_t) async -> Void = { _, _ in }
    ) async throws -> Run {
        let child = ChildProcess(
            executable: MirrorProcess.executable.path, arguments: arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            standardOutput: slave, standardError: slave)
        let started: ChildProcess.Started
        do {
            started = try child.start()
        } catch {
            close(slave)
            throw error
        }
        // The child's copies hold the terminal open; ours goes once it is spawned, so the reader
        // sees the end when the child exits. One run per terminal.
        close(slave)
        Thread { [self] in readUntilClosed() }.start()
        let side = Task { await during(self, started.pid) }
        let status = await started.wait().code
        side.cancel()
        await side.value
        while !finished.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(20)) }
        return Run(status: status, chunks: state.withLock { $0.chunks })
    }

    private let finished = Mutex(false)

    private func readUntilClosed() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            state.withLock { $0.chunks.append(($0.columns, Array(buffer[..<count]))) }
        }
        finished.withLock { $0 = true }
    }
}

/// A terminal that reflows its lines when resized, as VTE (GNOME Terminal), kitty, iTerm2 and tmux
/// do: it keeps logical lines and lays them out at the width it has now. It understands what
/// mirror writes (text, CR, LF, cursor up `ESC [ n A`, erase down `ESC [ J`) and records anything
/// else as a problem.
struct ReflowingTerminal {
    private(set) var lines: [[Unicode.Scalar]] = [[]]
    private var line = 0
    private var column = 0
    var columns: Int
    private(set) var problems: [String] = []
    private var pending: [UInt8] = []

    init(columns: Int) {
        self.columns = columns
    }

    /// The screen's text, one string per logical line.
    var text: [String] {
        lines.map { String(String.UnicodeScalarView($0)) }
    }

    private func rows(of logical: [Unicode.Scalar]) -> Int {
        max(1, (logical.count + columns - 1) / columns)
    }

    mutating func feed(_ bytes: [UInt8]) {
        pending += bytes
        // Whole UTF-8 sequences and whole escapes only: a chunk may end in the middle of either.
        var scalars = Array(String(decoding: pending, as: UTF8.self).unicodeScalars)
        if let last = pending.last, last >= 0x80, scalars.last == "\u{FFFD}" {
            let cut = pending.lastIndex { $0 & 0xC0 != 0x80 } ?? pending.startIndex
            scalars = Array(String(decoding: pending[..<cut], as: UTF8.self).unicodeScalars)
            pending = Array(pending[cut...])
        } else {
            pending = []
        }
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            switch scalar {
            case "\r":
                column = column / columns * columns
            case "\n":
                line += 1
                if line == lines.count { lines.append([]) }
                column = 0
            case "\u{1B}":
                var end = index + 1
                guard end < scalars.count else {
                    pending = Array(String(String.UnicodeScalarView(scalars[index...])).utf8) + pending
                    return
                }
                guard scalars[end] == "[" else {
                    problems.append("an escape other than CSI")
                    index = end
                    continue
                }
                end += 1
                var parameter = ""
                while end < scalars.count, ("0"..."9").contains(scalars[end]) {
                    parameter.unicodeScalars.append(scalars[end])
                    end += 1
                }
                guard end < scalars.count else {
                    pending = Array(String(String.UnicodeScalarView(scalars[index...])).utf8) + pending
                    return
                }
                switch scalars[end] {
                case "A": up(Int(parameter) ?? 1)
                case "J":
                    lines[line] = Array(lines[line].prefix(column))
                    lines.removeSubrange((line + 1)...)
                default: problems.append("ESC [\(parameter)\(scalars[end])")
                }
                index = end
            default:
                if scalar.value < 0x20 { problems.append("control \(scalar.value)") }
                while lines[line].count < column { lines[line].append(" ") }
                if column < lines[line].count {
                    lines[line][column] = scalar
                } else {
                    lines[line].append(scalar)
                }
                column += 1
            }
            index += 1
        }
    }

    /// Up `count` screen rows, as laid out at the width the terminal has now.
    private mutating func up(_ count: Int) {
        var rowInLine = column / columns
        let offset = column % columns
        for _ in 0..<count {
            if rowInLine > 0 {
                rowInLine -= 1
            } else if line > 0 {
                line -= 1
                rowInLine = rows(of: lines[line]) - 1
            } else {
                problems.append("cursor up past the top")
            }
        }
        column = rowInLine * columns + offset
    }
}
