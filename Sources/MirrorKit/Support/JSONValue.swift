import FoundationEssentials

/// Any JSON document, read by `JSONDecoder`: for the few places that look at a document's shape
/// rather than decode a type (a config file's keys, an error body's message), without Foundation's
/// `JSONSerialization`.
enum JSONValue: Decodable, Equatable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// `bytes` as JSON; nil when they are not, or nest deeper than ``JSONDocument/maxNesting``.
    static func parse(_ bytes: some Sequence<UInt8>) -> JSONValue? {
        try? JSONDocument.decode(JSONValue.self, from: Array(bytes))
    }

    subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { members[key] } else { nil }
    }

    var object: [String: JSONValue]? {
        if case .object(let members) = self { members } else { nil }
    }

    var array: [JSONValue]? {
        if case .array(let elements) = self { elements } else { nil }
    }

    var string: String? {
        if case .string(let text) = self { text } else { nil }
    }

    /// A number that is a whole one, as `JSONSerialization` gave it as an `Int`.
    var integer: Int? {
        if case .number(let value) = self, let whole = Int(exactly: value) { whole } else { nil }
    }
}

/// JSON a server (or a config file) chooses, decoded with its depth checked first.
enum JSONDocument {
    /// Deeper than any document mirror reads (API answers nest about six deep). Foundation's
    /// JSONDecoder traps, instead of throwing, on a document that ends just past its own limit of
    /// 512 levels, and a server (or a config file) chooses the document: it is refused first.
    static let maxNesting = 64

    /// Whether arrays and objects in `body` open more than `limit` deep, brackets in strings aside.
    static func isNested(_ body: [UInt8], deeperThan limit: Int) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in body {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return true }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
            default:
                break
            }
        }
        return false
    }

    /// `body` decoded as `T`, refused first when it nests deeper than ``maxNesting``.
    static func decode<T: Decodable>(_ type: T.Type, from body: [UInt8]) throws -> T {
        if isNested(body, deeperThan: maxNesting) {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: [], debugDescription: "nested deeper than \(maxNesting) levels"))
        }
        return try JSONDecoder().decode(T.self, from: Data(body))
    }
}
