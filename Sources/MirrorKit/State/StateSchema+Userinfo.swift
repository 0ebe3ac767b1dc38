/// Migration 7: the URLs with a userinfo an earlier version stored are written over.
///
/// Before it, a private feed given as `https://user:pass@host/feed.rss` left its password in the
/// state: in the feed's name (runs, files' sources, items) and in every relative enclosure's
/// URL. Names keep the userinfo as `***`, the form this version gives them; URLs that are
/// fetched lose it, as this version's do (the credentials come from the run's own URL).
extension StateSchema {
    /// The columns that hold a URL or a name with one, and what becomes of a userinfo there.
    private static let columnsWithURLs: [(table: String, column: String, rewrite: @Sendable (String) -> String)] = [
        ("files", "url", stripped),
        ("files", "item", strippedItem),
        ("files", "source", URLUserinfo.redacting(in:)),
        ("removed", "url", stripped),
        ("runs", "source", URLUserinfo.redacting(in:)),
        ("runs", "record", URLUserinfo.redacting(in:)),
        ("crawl_cursors", "source", URLUserinfo.redacting(in:)),
        ("listing_entries", "source", URLUserinfo.redacting(in:)),
        ("albums", "source", URLUserinfo.redacting(in:)),
        ("images", "source", URLUserinfo.redacting(in:)),
        ("images", "image", URLUserinfo.redacting(in:)),
        ("albums", "problem", URLUserinfo.redacting(in:)),
        ("albums", "context", URLUserinfo.redacting(in:)),
    ]

    static func removeUserinfo(_ db: SQLiteConnection) throws(SQLiteError) {
        for (table, column, rewrite) in columnsWithURLs {
            // Without an `@` no value holds a userinfo, and most tables hold none.
            let values = try db.rows("SELECT DISTINCT \(column) AS value FROM \(table) WHERE \(column) LIKE '%@%'")
            for row in values {
                let value = try row.text("value")
                let rewritten = rewrite(value)
                guard rewritten != value else { continue }
                // Two rows that differed only in a password are one now (keys of a source): the
                // one rewritten last stays, either being the same source's.
                try db.execute("UPDATE OR REPLACE \(table) SET \(column) = ? WHERE \(column) = ?", [.text(rewritten), .text(value)])
            }
        }
    }

    private static func stripped(_ url: String) -> String { URLUserinfo.split(url).url }

    /// A feed's item is `url <enclosure URL>` (fetched: stripped), or names the feed (`entry <feed>
    /// <id>`, `dash <feed> <file>`: redacted, as the feed's name now is).
    private static func strippedItem(_ item: String) -> String {
        item.hasPrefix("url ") ? "url " + stripped(String(item.dropFirst(4))) : URLUserinfo.redacting(in: item)
    }
}
