import Glibc

/// printf's formatting of numbers (`%.1f`, `%02d`, `%04X`), without Foundation's
/// `String(format:)`: mirror links `FoundationEssentials` alone, which has none.
package enum CFormat {
    /// `arguments` formatted by the C library's `vsnprintf` with `format`; for short texts.
    package static func string(_ format: String, _ arguments: any CVarArg...) -> String {
        withVaList(arguments) { list in
            var buffer = [CChar](repeating: 0, count: 128)
            let length = vsnprintf(&buffer, buffer.count, format, list)
            precondition(length >= 0 && Int(length) < buffer.count, "CFormat is for short texts: \(format)")
            return String(decoding: buffer[..<Int(length)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}
