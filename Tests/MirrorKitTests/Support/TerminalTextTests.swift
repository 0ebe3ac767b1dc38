import Testing
@testable import MirrorKit

@Suite("Escaping text from the network for a terminal", .timeLimit(.minutes(1)))
struct TerminalTextTests {
    @Test func controlsBidiControlsAndLineBreaksAreEscapedAndNothingElse() {
        #expect("\u{1B}[2J\u{1B}]0;owned\u{7}".escapedForTerminal == "\\u{1B}[2J\\u{1B}]0;owned\\u{7}")
        #expect("report\u{202E}fdp.exe".escapedForTerminal == "report\\u{202E}fdp.exe")
        #expect("a\nmirror: forged\r\tb".escapedForTerminal == "a\\nmirror: forged\\r\\tb")
        #expect("\u{0}\u{7F}\u{85}\u{9B}\u{61C}\u{200E}\u{200F}\u{2028}\u{2029}\u{202A}\u{2066}\u{2069}".escapedForTerminal
            == "\\u{0}\\u{7F}\\u{85}\\u{9B}\\u{61C}\\u{200E}\\u{200F}\\u{2028}\\u{2029}\\u{202A}\\u{2066}\\u{2069}")
        // A backslash is doubled, so an escape printed is never mistaken for the text `\u{1B}`.
        #expect("C:\\u{1B}".escapedForTerminal == "C:\\\\u{1B}")
        let plain = "漢字 é\u{301} 👩‍👩‍👧 https://h.example/a%1B?q=1"
        #expect(plain.escapedForTerminal == plain)
    }
}
