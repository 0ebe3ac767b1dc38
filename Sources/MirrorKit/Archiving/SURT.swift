/// The Sort-friendly URI Reordering Transform of a URL, as the `surt` package makes it with its
/// defaults (and so cdxj-indexer, pywb and ReplayWeb.page look a capture up by it): Google's
/// canonicalization, then the Internet Archive's, then the host's labels reversed.
///
/// Google's: the fragment dropped; the host and path unescaped until nothing changes, the host
/// without empty labels or dots at its ends, a host of digits read as an IPv4 address; the path's
/// `.` and `..` resolved and repeated slashes folded; path and query escaped once (bytes outside
/// printable ASCII, `#` and `%`). The Archive's: everything lower-cased, a leading `www` (with
/// digits) dropped, the login and the scheme's own port dropped, a trailing slash dropped unless
/// the path is `/`, session ids of 32 letters and digits taken out of the query (jsessionid,
/// phpsessid, sid), its parameters sorted. Not done: IDNA for a host that is not ASCII, the
/// octal and dotted-decimal IPv4 forms `surt` resolves through DNS, and its rarer session ids
/// (ASP's, ColdFusion's, ASP.NET's in a path).
enum SURT {
    static func of(_ url: String) -> String {
        var rest = Array(url.utf8.drop { $0 <= 0x20 }.reversed().drop { $0 <= 0x20 }.reversed().filter { $0 != 0x09 && $0 != 0x0A && $0 != 0x0D })
        var scheme: [UInt8] = []
        if let separator = rest.firstRange(of: Array("://".utf8)) {
            scheme = Array(rest[..<separator.lowerBound]).map(\.asciiLowercased)
            rest = Array(rest[separator.upperBound...])
        }
        if let hash = rest.firstIndex(of: UInt8(ascii: "#")) { rest = Array(rest[..<hash]) }
        let pathStart = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? rest.endIndex
        var authority = Array(rest[..<pathStart])
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) { authority = Array(authority[(at + 1)...]) }
        var port: [UInt8] = []
        if let colon = authority.lastIndex(of: UInt8(ascii: ":")), authority.last != UInt8(ascii: "]") {
            port = Array(authority[(colon + 1)...])
            authority = Array(authority[..<colon])
        }
        var path = Array(rest[pathStart...])
        var query: [UInt8]?
        if let question = path.firstIndex(of: UInt8(ascii: "?")) {
            query = Array(path[(question + 1)...])
            path = Array(path[..<question])
        }
        let portNumber = Int(String(decoding: port, as: UTF8.self))
        let defaultPort = scheme == Array("http".utf8) ? 80 : scheme == Array("https".utf8) ? 443 : nil
        let keptPort = portNumber.flatMap { $0 == defaultPort ? nil : $0 }

        var key = Array(host(authority).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).reversed().joined(separator: [UInt8(ascii: ",")]))
        if let keptPort { key += ":\(keptPort)".utf8 }
        key.append(UInt8(ascii: ")"))
        key += canonicalPath(path)
        if let query = query.map(canonicalQuery), !query.isEmpty {
            key.append(UInt8(ascii: "?"))
            key += query
        }
        return String(decoding: key, as: UTF8.self)
    }

    private static func host(_ authority: [UInt8]) -> [UInt8] {
        var host = unescapedRepeatedly(authority).filter { $0 != UInt8(ascii: "[") && $0 != UInt8(ascii: "]") }
        // One pass, as Python's `replace` makes it: `a...b` keeps two dots.
        var folded: [UInt8] = []
        var index = 0
        while index < host.count {
            folded.append(host[index])
            index += index + 1 < host.count && host[index] == 0x2E && host[index + 1] == 0x2E ? 2 : 1
        }
        host = folded
        while host.first == 0x2E { host.removeFirst() }
        while host.last == 0x2E { host.removeLast() }
        if !host.isEmpty, host.allSatisfy({ (0x30...0x39).contains($0) }), let number = UInt64(String(decoding: host, as: UTF8.self)) {
            let address = UInt32(truncatingIfNeeded: number)
            host = Array("\(address >> 24).\(address >> 16 & 0xFF).\(address >> 8 & 0xFF).\(address & 0xFF)".utf8)
        }
        host = escapedOnce(host).map(\.asciiLowercased)
        // `www`, `www2`… and its dot.
        if host.starts(with: "www".utf8) {
            let digits = host.dropFirst(3).prefix { (0x30...0x39).contains($0) }
            let end = 3 + digits.count
            if end < host.count, host[end] == 0x2E { host.removeFirst(end + 1) }
        }
        return host
    }

    private static func canonicalPath(_ raw: [UInt8]) -> [UInt8] {
        let path = unescapedRepeatedly(raw)
        var kept: [ArraySlice<UInt8>] = []
        if !path.isEmpty {
            for segment in path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst() {
                if segment.elementsEqual([0x2E]) { continue }
                if segment.elementsEqual([0x2E, 0x2E]) {
                    if kept.isEmpty { kept.append(segment) } else { kept.removeLast() }
                    continue
                }
                kept.append(segment)
            }
        }
        var normalized: [UInt8] = [UInt8(ascii: "/")]
        for (index, segment) in kept.enumerated() {
            if index == kept.count - 1 {
                normalized += segment
            } else if !segment.isEmpty {
                normalized += segment
                normalized.append(UInt8(ascii: "/"))
            }
        }
        var result = escapedOnce(normalized).map(\.asciiLowercased)
        if result.count > 1, result.last == UInt8(ascii: "/") { result.removeLast() }
        return result
    }

    private static func canonicalQuery(_ raw: [UInt8]) -> [UInt8] {
        guard !raw.isEmpty else { return [] }
        let query = withoutSessionIDs(escapedOnce(unescapedRepeatedly(raw))).map(\.asciiLowercased)
        guard query.count > 1 else { return query }
        let parameters = query.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false).map { parameter -> (key: ArraySlice<UInt8>, value: ArraySlice<UInt8>?) in
            guard let equals = parameter.firstIndex(of: UInt8(ascii: "=")) else { return (parameter, nil) }
            return (parameter[..<equals], parameter[(equals + 1)...])
        }
        // As Python sorts the pairs: by name, then a name alone before the same name with a value.
        let sorted = parameters.sorted { left, right in
            if !left.key.elementsEqual(right.key) { return left.key.lexicographicallyPrecedes(right.key) }
            guard let rightValue = right.value else { return false }
            guard let leftValue = left.value else { return true }
            return leftValue.lexicographicallyPrecedes(rightValue)
        }
        var result: [UInt8] = []
        for (index, parameter) in sorted.enumerated() {
            if index > 0 { result.append(UInt8(ascii: "&")) }
            result += parameter.key
            if let value = parameter.value {
                result.append(UInt8(ascii: "="))
                result += value
            }
        }
        return result
    }

    /// `surt`'s session ids: a name and a value of their usual form, each taken out once, with the
    /// `&` after it.
    private static func withoutSessionIDs(_ query: [UInt8]) -> [UInt8] {
        var query = query
        let length = 32
        for name in ["jsessionid=", "phpsessid=", "sid="] {
            let lowered = query.map(\.asciiLowercased)
            // The last match, as the pattern's greedy `^(.*)` finds it.
            var found: Range<Int>?
            var from = 0
            while let range = lowered[from...].firstRange(of: Array(name.utf8)) {
                let valueEnd = range.upperBound + length
                if valueEnd <= query.count, query[range.upperBound..<valueEnd].allSatisfy(\.isASCIILetterOrDigit),
                   valueEnd == query.count || query[valueEnd] == UInt8(ascii: "&") {
                    found = range.lowerBound..<valueEnd
                }
                from = range.lowerBound + 1
            }
            if let found {
                let removeEnd = found.upperBound < query.count ? found.upperBound + 1 : found.upperBound
                query.removeSubrange(found.lowerBound..<removeEnd)
            }
        }
        return query
    }

    private static func unescapedRepeatedly(_ bytes: [UInt8]) -> [UInt8] {
        var current = bytes
        while true {
            var next: [UInt8] = []
            next.reserveCapacity(current.count)
            var index = 0
            while index < current.count {
                if current[index] == UInt8(ascii: "%"), index + 2 < current.count,
                   let high = String.hexValue(current[index + 1]), let low = String.hexValue(current[index + 2]) {
                    next.append(high << 4 | low)
                    index += 3
                } else {
                    next.append(current[index])
                    index += 1
                }
            }
            if next == current { return current }
            current = next
        }
    }

    /// Every byte outside printable ASCII, and `#`, `%` and space, as `%XX`.
    private static func escapedOnce(_ bytes: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in bytes {
            if byte <= 0x20 || byte >= 0x7F || byte == UInt8(ascii: "#") || byte == UInt8(ascii: "%") {
                result += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            } else {
                result.append(byte)
            }
        }
        return result
    }
}
