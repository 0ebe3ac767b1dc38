import FoundationEssentials
@testable import MirrorKit
import Testing

@Suite struct ImgurRemovedMediaTests {
    @Test(arguments: [
        ("https://i.imgur.com/removed.png", true),
        ("https://i.imgur.com/a/b/removed.png?from=abc#x", true),
        ("https://i.imgur.com/removed%2Epng", true),
        ("https://i.imgur.com/%72emoved.png", true),
        ("https://i.imgur.com/abcde.png", false),
        ("https://i.imgur.com/removed.png.jpg", false),
        ("https://i.imgur.com/notremoved.png", false),
        ("https://i.imgur.com/abcde.png?next=/removed.png", false),
        ("https://i.imgur.com/abcde.png#/removed.png", false),
        ("https://i.imgur.com/x%20y.png", false),
        ("https://i.imgur.com/a%2Fremoved.png", true),
        ("https://i.imgur.com/REMOVED.PNG", false),
    ])
    func theRedirectToThePlaceholderIsToldByItsPath(url: String, isPlaceholder: Bool) {
        #expect(ImgurRemovedMedia.namesPlaceholder(url) == isPlaceholder)
        // What the check answered before it searched the bytes first: the parsed path alone.
        #expect(ImgurRemovedMedia.namesPlaceholder(url) == (URLComponents(string: url)?.path.hasSuffix("/removed.png") == true))
    }
}
