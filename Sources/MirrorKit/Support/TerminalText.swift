/// Characters that change how a terminal, a mail reader or a file manager shows the text around
/// them rather than showing themselves.
///
/// Feeds, URLs and servers' messages are written by strangers: an ESC there is a terminal escape
/// sequence in the cron mail that quotes them, a U+202E shows `exe.txt` as `txt.exe`, and a line
/// break forges a log line of its own.
package enum DisplayControl {
    /// C0 controls (ESC, NUL, line breaks, tab, …), DEL, C1 controls (CSI U+009B, NEL U+0085, …),
    /// the bidi controls (embeddings, overrides, isolates, LRM/RLM, ALM) and the line and
    /// paragraph separators.
    package static func contains(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x2028...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}

extension String {
    /// The text with every ``DisplayControl`` character written as an escape (`\n`, `\t`, `\r`,
    /// else `\u{1B}`, `\u{202E}`) and `\` as `\\`, so what is printed is exactly what the text
    /// holds and steers nothing.
    ///
    /// MirrorKit's log messages and error descriptions quote URLs, file names, feed titles and
    /// server messages as they came; a front end escapes them with this where they reach a
    /// terminal or a mail, as the `mirror` command does for every line it writes.
    package var escapedForTerminal: String {
        guard unicodeScalars.contains(where: { $0 == "\\" || DisplayControl.contains($0) }) else { return self }
        var result = ""
        result.reserveCapacity(utf8.count + 8)
        for scalar in unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where DisplayControl.contains(scalar):
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
