/// The authority (`host[:port]`) of a URL: the unit of per-host limits and of host health.
enum URLAuthority {
    /// A plain scan of the UTF-8 bytes: every schedule computes it, and Foundation's string search
    /// costs more than the rest of a schedule. Empty when `url` has no authority.
    static func of(_ url: String) -> String {
        let bytes = url.utf8
        var index = bytes.startIndex
        var state = 0  // 0: scheme, 1 and 2: the slashes, 3: authority
        var start = index
        while index != bytes.endIndex {
            let byte = bytes[index]
            switch state {
            case 0 where byte == UInt8(ascii: ":"): state = 1
            case 1, 2:
                guard byte == UInt8(ascii: "/") else { return "" }
                state += 1
                if state == 3 { start = bytes.index(after: index) }
            case 3 where byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#"):
                return String(url[start..<index])
            default: break
            }
            index = bytes.index(after: index)
        }
        return state == 3 ? String(url[start...]) : ""
    }
}
