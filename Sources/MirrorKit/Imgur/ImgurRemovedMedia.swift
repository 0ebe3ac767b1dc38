import FoundationEssentials

/// How Imgur's CDN answers for media that was removed: a redirect to `removed.png`, a placeholder
/// with a fixed ETag. Only the tag mirror applies this rule; a feed's files are judged as they come.
enum ImgurRemovedMedia {
    /// The ETag Imgur's CDN gives its "this image was removed" placeholder.
    static let placeholderETag = "\"d835884373f4d6c8f24742ceabe74946\""

    @Sendable static func isPlaceholder(_ response: TransferResponse) -> Bool {
        response.etag == placeholderETag || namesPlaceholder(response.finalURL)
    }

    /// Whether the path of `url` (decoded) ends in `/removed.png`. Asked of every response a tag
    /// mirror gets: a URL that neither names the file nor escapes a byte cannot, and is not
    /// parsed (parsing it was most of what judging a response cost).
    static func namesPlaceholder(_ url: String) -> Bool {
        guard url.withUTF8Bytes(mayNamePlaceholder) else { return false }
        return URLComponents(string: url)?.path.hasSuffix(placeholderPath) == true
    }

    private static let placeholderPath = "/removed.png"
    private static let placeholderPathBytes = Array(placeholderPath.utf8)

    /// A byte search: `String.contains` compares by grapheme and cost more than the parse it saves.
    private static func mayNamePlaceholder(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        if bytes.contains(UInt8(ascii: "%")) { return true }
        let needle = placeholderPathBytes
        guard bytes.count >= needle.count else { return false }
        for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
            if bytes[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }
}
