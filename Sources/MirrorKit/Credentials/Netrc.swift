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
        while let token = tokens.popFirst() {
            switch token {
            case "machine":
                finish()
                guard let host = tokens.popFirst() else { throw .configuration("\(file): 'machine' without a name") }
                current = (host.lowercased(), nil, nil)
            case "default":
                finish()
                current = (nil, nil, nil)
            case "login", "password", "account":
                guard let value = tokens.popFirst() else { throw .configuration("\(file): '\(token)' without a value") }
                guard current != nil else { throw .configuration("\(file): '\(token)' before any 'machine'") }
                if token == "login" { current!.login = value }
                if token == "password" { current!.password = value }
            case "macdef":
                // A macro runs to the first empty line: its words are not entries.
                finish()
                current = nil
                _ = tokens.popFirst()
                while let next = tokens.first, next != "\n\n" { tokens.removeFirst() }
            case "\n\n":
                continue
            default:
                throw .configuration("\(file): unexpected '\(token)' (expected machine, default, login, password, account or macdef)")
            }
        }
        finish()
    }

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

    /// The credentials for `host`: its machine entry, else the default one.
    func credentials(forHost host: String) -> URLCredentials? {
        machines[host.lowercased()] ?? fallback
    }

    /// The words of netrc text, with `"…"` quoting (and `\` escapes in it) as curl reads them; an
    /// empty line is kept as the token `\n\n`, which ends a macro.
    private static func tokens(of text: String) -> [String] {
        var tokens: [String] = []
        var word = ""
        var inQuotes = false
        var escaped = false
        var newlines = 0
        func flush() {
            if !word.isEmpty { tokens.append(word) }
            word = ""
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
                newlines += 1
                if newlines == 2 { tokens.append("\n\n") }
                continue
            }
            if character == " " || character == "\t" || character == "\r" {
                flush()
                continue
            }
            newlines = 0
            if character == "\"" && word.isEmpty {
                inQuotes = true
            } else {
                word.append(character)
            }
        }
        flush()
        return tokens
    }
}
