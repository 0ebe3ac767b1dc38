import Testing
@testable import MirrorKit

/// What a user pastes: a tag, or an Imgur URL in any of the forms a browser or a share button gives.
@Suite("Imgur addresses")
struct ImgurAddressTests {
    @Test(arguments: [
        ("cats", ImgurAddress.tag("cats")),
        ("#cats", .tag("cats")),
        ("  cats  ", .tag("cats")),
        ("funny_gifs", .tag("funny_gifs")),
        ("https://imgur.com/t/cats", .tag("cats")),
        ("imgur.com/t/cats", .tag("cats")),
        ("https://www.imgur.com/t/cats/top/week?x=1", .tag("cats")),
        ("https://imgur.com/t/cats/aBcDeFg", .post("aBcDeFg")),
        ("https://imgur.com/t/funny/a-title-aBcDeFg", .post("aBcDeFg")),
        ("https://imgur.com/t/caf%C3%A9", .tag("café")),
        ("https://imgur.com/a/Ef1gH", .album("Ef1gH")),
        ("http://m.imgur.com/a/Ef1gH#comments", .album("Ef1gH")),
        ("imgur.com/a/ducks-and-dog-0pVuZq8", .album("0pVuZq8")),
        ("https://imgur.com/gallery/0pVuZq8", .post("0pVuZq8")),
        ("https://imgur.com/gallery/ducks-and-dog-0pVuZq8", .post("0pVuZq8")),
        ("www.imgur.com/gallery/0pVuZq8/", .post("0pVuZq8")),
        ("HTTPS://IMGUR.COM/gallery/0pVuZq8", .post("0pVuZq8")),
        ("https://i.imgur.com/mvWNMH4.mp4", .image("mvWNMH4")),
        ("i.imgur.com/aB3dE5fm.jpg", .image("aB3dE5f")),
        ("https://i.imgur.com/Ziz25.jpg", .image("Ziz25")),
        ("https://i.imgur.com/Ziz25h.jpg", .image("Ziz25")),
        ("https://imgur.com/mvWNMH4", .image("mvWNMH4")),
        ("imgur.com/mvWNMH4.gifv", .image("mvWNMH4")),
    ])
    func readsEveryFormUsersPaste(_ text: String, _ expected: ImgurAddress) throws {
        #expect(try ImgurAddress(parsing: text) == expected)
    }

    @Test(arguments: [
        ("https://imgur.com/t/cats", "https:"),
        ("", "is empty"),
        ("#", "a tag has 1 to 100 characters"),
        ("https://example.com/feed.rss", "is not an Imgur address (example.com)"),
        ("ftp://imgur.com/a/Ef1gH", "is a ftp: URL"),
        ("https://imgur.com/a/", "names no album"),
        ("https://imgur.com/a/x!y", "has no Imgur id"),
        ("https://imgur.com/user/someone", "names no album, post, tag or image"),
        ("https://i.imgur.com/", "names no image"),
        ("cats and dogs", "no spaces"),
        ("..", "is not an Imgur address"),
        ("#.", "is not a tag"),
        ("https://imgur.com/t/%2E%2E", "is not a tag"),
        ("\u{FEFF}cats", "formatting characters"),
        ("ca\u{202E}ts", "formatting characters"),
        ("https://imgur.com/t/cats/aBcDeFg/more", "names no album"),
        ("https://imgur.com/t/new%20york", "no spaces"),
        (String(repeating: "c", count: 101), "1 to 100 characters"),
    ])
    func refusesWhatNamesNoSourceAndSaysWhy(_ text: String, _ said: String) {
        // The first row is a control: a good address parses and is not refused.
        if said == "https:" {
            #expect(throws: Never.self) { try ImgurAddress(parsing: text) }
            return
        }
        #expect {
            try ImgurAddress(parsing: text)
        } throws: { error in
            "\(error)".contains(said)
        }
    }

    @Test func aControlCharacterIsRefusedAndQuotedAsGiven() {
        // MirrorKit's errors quote what they were given; the command escapes it for the terminal
        // (ManySourcesTests checks what it prints).
        #expect {
            try ImgurAddress(parsing: "ca\u{1B}[2Jts")
        } throws: { error in
            "\(error)" == "'ca\u{1B}[2Jts' is not a tag: a tag has no spaces, slashes, control or formatting characters"
        }
    }
}
