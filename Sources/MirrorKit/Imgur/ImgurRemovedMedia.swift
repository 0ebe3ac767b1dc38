import FoundationEssentials

/// How Imgur's CDN answers for media that was removed: a redirect to `removed.png`, a placeholder
/// with a fixed ETag. Only the tag mirror applies this rule; a feed's files are judged as they come.
enum ImgurRemovedMedia {
    /// The ETag Imgur's CDN gives its "this image was removed" placeholder.
    static let placeholderETag = "\"d835884373f4d6c8f24742ceabe74946\""

    @Sendable static func isPlaceholder(_ response: TransferResponse) -> Bool {
        response.etag == placeholderETag
            || URLComponents(string: response.finalURL)?.path.hasSuffix("/removed.png") == true
    }
}
