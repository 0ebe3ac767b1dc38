/// The authority (`host[:port]`) of a URL: the unit of per-host limits and of host health.
enum URLAuthority {
    /// A plain scan of the UTF-8 bytes: every schedule, fetch and answer computes it, and
    /// Foundation's string search (or stepping through the view's indices) costs more than the
    /// rest of a schedule. Empty when `url` has no authority.
    static func of(_ url: String) -> String {
        url.withUTF8Bytes { bytes in range(in: bytes).map { String(decoding: bytes[$0], as: UTF8.self) } } ?? ""
    }

    /// Where the authority is among `bytes`: after "scheme://", up to the first "/", "?" or "#".
    private static func range(in bytes: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        var state = 0  // 0: scheme, 1 and 2: the slashes, 3: authority
        var start = 0
        for (index, byte) in bytes.enumerated() {
            switch state {
            case 0 where byte == UInt8(ascii: ":"): state = 1
            case 1, 2:
                guard byte == UInt8(ascii: "/") else { return nil }
                state += 1
                if state == 3 { start = index + 1 }
            case 3 where byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#"):
                return start..<index
            default: break
            }
        }
        return state == 3 ? start..<bytes.count : nil
    }
}
