/// What a response's head says of its body, judged before a byte of it is kept: the checks
/// ``CurlTransfer`` makes as the head arrives, and ``Downloader`` after a 416.
extension CurlTransfer {
    /// The fields that say what the body is: its encoding, its length.
    static let fieldsSayingWhatTheBodyIs = ["Content-Encoding", "Content-Length"]

    /// The response's Content-Encoding when it is one to refuse: any but identity, except gzip on
    /// a `.gz` or `.tgz` file, where it names the file's own format (Apache's `AddEncoding`
    /// labels such files so whatever the request asked for) and the bytes are the file.
    static func refusedEncoding(_ header: String?, url: String) -> String? {
        guard let header else { return nil }
        let codings = Self.codings(header).filter { $0 != "identity" }
        if codings.isEmpty { return nil }
        if codings.count == 1, codings[0] == "gzip" || codings[0] == "x-gzip" {
            let path = url.split(separator: "?", maxSplits: 1).first.map { $0.lowercased() } ?? ""
            if path.hasSuffix(".gz") || path.hasSuffix(".tgz") { return nil }
        }
        return header
    }

    /// The codings of a comma-separated list, lower-cased, without parameters or empty items.
    private static func codings(_ header: String) -> [String] {
        header.split(separator: ",").compactMap { item in
            let coding = item.split(separator: ";").first?.trimming(.spaces).lowercased() ?? ""
            return coding.isEmpty ? nil : coding
        }
    }

    /// Whether the response's own validator is the one If-Range named (absent counts as a match:
    /// only a contradiction is proof of another version).
    static func validator(_ validator: String, matches headers: HTTPHeaders) -> Bool {
        if validator.hasPrefix("\"") {
            return headers["ETag"].map { $0 == validator } ?? true
        }
        return headers["Last-Modified"].map { $0 == validator } ?? true
    }
}
