import Foundation

/// Response headers in the order received, looked up without regard to case.
public struct HTTPHeaders: Sendable, Equatable, Sequence {
    public private(set) var fields: [(name: String, value: String)] = []

    public init(_ fields: [(name: String, value: String)] = []) {
        self.fields = fields
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The first value of the header called `name`, compared case-insensitively.
    public subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    mutating func append(name: String, value: String) {
        fields.append((name, value))
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    /// Parses one raw header line as libcurl delivers it (with its CRLF). Returns nil for the
    /// status line, the blank line and anything without a colon.
    static func parseField(_ line: Substring) -> (name: String, value: String)? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        let name = line[..<colon].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, !name.contains(" ") else { return nil }
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        return (name, value)
    }
}

extension StringProtocol {
    func caseInsensitiveEquals(_ other: some StringProtocol) -> Bool {
        lowercased() == other.lowercased()
    }
}
