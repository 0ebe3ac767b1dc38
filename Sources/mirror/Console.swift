import Foundation
import MirrorKit

/// Every line mirror writes for a person, on standard output or standard error, goes through
/// here: URLs, file names, feed titles and servers' messages come from strangers, and are escaped
/// once, at the last step, rather than wherever a message happens to quote them.
enum Console {
    /// One line on standard output.
    static func print(_ line: String) {
        Swift.print(line.escapedForTerminal)
    }

    /// One line on standard error.
    static func printError(_ line: String) {
        FileHandle.standardError.write(Data((line.escapedForTerminal + "\n").utf8))
    }
}
