/// Characters that change how a terminal, a mail reader or a file manager shows the text around
/// them rather than showing themselves.
///
/// Feeds, URLs and servers' messages are written by strangers: an ESC there is a terminal escape
/// sequence in the cron mail that quotes them, a U+202E shows `exe.txt` as `txt.exe`, and a line
/// break forges a log line of its own.
enum DisplayControl {
    /// C0 controls (ESC, NUL, line breaks, tab, …), DEL, C1 controls (CSI U+009B, NEL U+0085, …),
    /// the bidi controls (embeddings, overrides, isolates, LRM/RLM, ALM) and the line and
    /// paragraph separators.
    static func contains(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x2028...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
