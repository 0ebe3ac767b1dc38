/// Where a JSON text stops being JSON, for a message a person can act on: the decoder says only
/// that the data is not valid. Found by a strict reading (RFC 8259); `nil` when that reading finds
/// nothing wrong (the decoder refused the text for another reason).
struct JSONSyntaxError: Error, Equatable, CustomStringConvertible {
    /// 1-based, counting lines by LF and columns by bytes.
    var line: Int
    var column: Int
    var problem: String

    var description: String { "line \(line), column \(column): \(problem)" }

    static func find(in bytes: [UInt8]) -> JSONSyntaxError? {
        var reader = Reader(bytes: bytes)
        do throws(JSONSyntaxError) {
            reader.skipSpace()
            try reader.value(depth: 0)
            reader.skipSpace()
            if reader.index < bytes.count { throw reader.error("text after the end of the document") }
            return nil
        } catch {
            return error
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var index = 0

        func error(_ problem: String) -> JSONSyntaxError {
            var line = 1
            var lineStart = 0
            for position in 0..<min(index, bytes.count) where bytes[position] == 0x0A {
                line += 1
                lineStart = position + 1
            }
            return JSONSyntaxError(line: line, column: index - lineStart + 1, problem: problem)
        }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func value(depth: Int) throws(JSONSyntaxError) {
            guard depth < 512 else { throw error("nested too deeply") }
            guard let byte = current else { throw error("the text ends where a value was expected") }
            switch byte {
            case UInt8(ascii: "{"): try object(depth: depth)
            case UInt8(ascii: "["): try array(depth: depth)
            case UInt8(ascii: "\""): try string()
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            default: throw error("expected a value, found '\(Self.shown(byte))'")
            }
        }

        mutating func object(depth: Int) throws(JSONSyntaxError) {
            if isEmpty(closedBy: UInt8(ascii: "}")) { return }
            repeat {
                guard current == UInt8(ascii: "\"") else {
                    throw error(current == nil ? "the text ends inside an object" : "expected a quoted name, found '\(Self.shown(current!))'")
                }
                try string()
                skipSpace()
                guard current == UInt8(ascii: ":") else { throw error("expected ':' after a name") }
                index += 1
                skipSpace()
                try value(depth: depth + 1)
            } while try !closes(UInt8(ascii: "}"), inside: "an object")
        }

        mutating func array(depth: Int) throws(JSONSyntaxError) {
            if isEmpty(closedBy: UInt8(ascii: "]")) { return }
            repeat {
                try value(depth: depth + 1)
            } while try !closes(UInt8(ascii: "]"), inside: "a list")
        }

        /// Past the opening `{` or `[`: whether `closing` follows at once (and is read).
        mutating func isEmpty(closedBy closing: UInt8) -> Bool {
            index += 1
            skipSpace()
            guard current == closing else { return false }
            index += 1
            return true
        }

        /// After a member: true when `closing` ends the container (and is read); otherwise the
        /// `,` is read, and another member must follow it.
        mutating func closes(_ closing: UInt8, inside container: String) throws(JSONSyntaxError) -> Bool {
            skipSpace()
            if current == closing {
                index += 1
                return true
            }
            guard current == UInt8(ascii: ",") else {
                throw error(current == nil ? "the text ends inside \(container)" : "expected ',' or '\(Self.shown(closing))', found '\(Self.shown(current!))'")
            }
            index += 1
            skipSpace()
            if current == closing { throw error("a ',' before '\(Self.shown(closing))'") }
            return false
        }

        mutating func string() throws(JSONSyntaxError) {
            index += 1
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escaped = current, Array(#""\/bfnrtu"#.utf8).contains(escaped) else { throw error("an unknown escape in a string") }
                    index += 1
                    if escaped == UInt8(ascii: "u") {
                        for _ in 0..<4 {
                            guard let hex = current, String.hexValue(hex) != nil else { throw error("\\u needs four hex digits") }
                            index += 1
                        }
                    }
                case 0x00..<0x20:
                    throw error(byte == 0x0A ? "a string runs past the end of its line" : "a control character in a string")
                default:
                    index += 1
                }
            }
            throw error("the text ends inside a string")
        }

        mutating func number() throws(JSONSyntaxError) {
            if current == UInt8(ascii: "-") { index += 1 }
            func digits(_ reader: inout Reader) -> Int {
                var count = 0
                while let byte = reader.current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { reader.index += 1; count += 1 }
                return count
            }
            guard digits(&self) > 0 else { throw error("a number needs digits") }
            if current == UInt8(ascii: ".") {
                index += 1
                guard digits(&self) > 0 else { throw error("a number needs digits after '.'") }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw error("a number needs digits in its exponent") }
            }
        }

        mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
            let expected = word.withUTF8Buffer { Array($0) }
            guard bytes[index...].starts(with: expected) else { throw error("expected '\(word)'") }
            index += expected.count
        }

        static func shown(_ byte: UInt8) -> String {
            (0x20..<0x7F).contains(byte) ? String(UnicodeScalar(byte)) : "\\u{\(String(byte, radix: 16))}"
        }
    }
}
