import Glibc

/// A netrc file's `machine` and `default` entries (login and password), as curl, wget and
/// gallery-dl read `~/.netrc`; `macdef` macros and `account` are skipped.
package struct Netrc: Sendable, Equatable {
    private(set) var machines: [String: URLCredentials] = [:]
    private(set) var fallback: URLCredentials?

    /// The most a netrc file may hold: a few lines per machine.
    static let maximumBytes = 1 << 20

    /// Parses netrc text; `file` names it in errors.
    package init(parsing text: String, file: String) throws(MirrorError) {
        var tokens = Self.tokens(of: text)[...]
        var current: (host: String?, login: String?, password: String?)?
        func finish() {
            guard let entry = current, let login = entry.login else { return }
            let credentials = URLCredentials(user: login, password: entry.password ?? "")
            if let host = entry.host {
                // The first entry for a machine is the one that counts (curl's and wget's rule).
                if machines[host] == nil { machines[host] = credentials }
            } else if fallback == nil {
                fallback = credentials
            }
        }
        // Words are never quoted back in an error: one may be a password.
        while let token = tokens.popFirst() {
            switch token.lowercased() {
            case "machine":
                finish()
                guard let host = tokens.popFirst(), host != Self.blankLine else { throw .configuration("\(file): 'machine' without a name") }
                current = (host.lowercased(), nil, nil)
            case "default":
                finish()
                current = (nil, nil, nil)
            case "login", "password", "account":
                guard let value = tokens.popFirst(), value != Self.blankLine else {
                    throw .configuration("\(file): '\(token)' without a value")
                }
                guard current != nil else { throw .configuration("\(file): '\(token)' before any 'machine'") }
                if token.lowercased() == "login" { current!.login = value }
                if token.lowercased() == "password" { current!.password = value }
            case "macdef":
                // A macro runs to the first empty line: its words are not entries.
                finish()
                current = nil
                while let next = tokens.popFirst(), next != Self.blankLine {}
            default:
                // A word curl and wget do not know either (or the blank line a macro ends with).
                continue
            }
        }
        finish()
    }

    /// The token an empty line becomes: it ends a macro.
    private static let blankLine = "\n\n"

    /// Reads the netrc file at `path`: a regular file of at most ``maximumBytes``.
    package static func load(path: String) throws(MirrorError) -> Netrc {
        let problem: String
        switch DescriptorReading.readSmallFile(atPath: path, limit: maximumBytes) {
        case .bytes(let bytes): return try Netrc(parsing: String(decoding: bytes, as: UTF8.self), file: path)
        case .missing: problem = "does not exist"
        case .notARegularFile: problem = "is not a regular file"
        case .tooLarge: problem = "is larger than 1 MiB; no netrc file is that large"
        case .failed(let code): problem = "cannot be read: \(String(cString: strerror(code)))"
        }
        throw .configuration("netrc file \(path) \(problem)")
    }

    /// The machine entry of `host`.
    func machine(_ host: String) -> URLCredentials? {
        machines[host.lowercased()]
    }

    /// The words of netrc text, with `"…"` quoting (and `\` escapes in it) as curl reads them; a
    /// `#` that begins a word comments out the rest of its line; an empty line is kept as
    /// ``blankLine``, which ends a macro.
    private static func tokens(of text: String) -> [String] {
        var tokens: [String] = []
        var word = ""
        var quoted = false
        var inQuotes = false
        var escaped = false
        var inComment = false
        var newlines = 0
        func flush() {
            if !word.isEmpty || quoted { tokens.append(word) }
            word = ""
            quoted = false
        }
        for character in text {
            if inQuotes {
                if escaped {
                    word.append(character)
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    inQuotes = false
                } else {
                    word.append(character)
                }
                continue
            }
            if character == "\n" || character == "\r\n" {
                flush()
                inComment = false
                newlines += 1
                if newlines == 2 { tokens.append(blankLine) }
                continue
            }
            if inComment { continue }
            if character == " " || character == "\t" || character == "\r" {
                flush()
                continue
            }
            newlines = 0
            if character == "#" && word.isEmpty && !quoted {
                inComment = true
            } else if character == "\"" && word.isEmpty {
                inQuotes = true
                quoted = true
            } else {
                word.append(character)
            }
        }
        flush()
        return tokens
    }
}
