/// What a run killed part way recorded, for the next run to finish (see
/// ``JobRunner/finishWhatARunCutShortRecorded()``): rows are appended, so the files a run
/// recorded are those past the last row there was when it began.
extension StateDatabase {
    /// One file recorded, by its row.
    struct RecordedRow: Sendable, Equatable {
        var row: Int64
        var path: String
        var item: String
        var url: String
        var source: String?
        var bytes: Int64
    }

    /// The last file row there is: a run that begins now records its files past it.
    func lastFileRow() throws(MirrorError) -> Int64 {
        try read("SELECT max(rowid) AS row FROM files") { row throws(SQLiteError) in try row.optionalInteger("row") ?? 0 }.first ?? 0
    }

    /// The files recorded past `row`, at most `limit`, in the order they were recorded.
    func files(recordedAfter row: Int64, limit: Int) throws(MirrorError) -> [RecordedRow] {
        try read(
            "SELECT rowid AS row, path, item, url, source, bytes FROM files WHERE rowid > ?1 ORDER BY rowid LIMIT ?2",
            [.integer(row), .integer(Int64(limit))]
        ) { row throws(SQLiteError) in
            RecordedRow(
                row: try row.integer("row"), path: try row.text("path"), item: try row.text("item"), url: try row.text("url"),
                source: try row.optionalText("source"), bytes: try row.integer("bytes"))
        }
    }
}
