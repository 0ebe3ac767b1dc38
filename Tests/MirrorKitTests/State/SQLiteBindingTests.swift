import Foundation
import Testing
@testable import MirrorKit

/// Text is bound to SQLite in place, without a copy (``SQLiteConnection/rows(_:_:)``): what a
/// statement reads must be each call's own text, whatever its length, and nothing bound may be
/// left on the statement once the call returns.
@Suite("SQLite statements with text bound in place")
struct SQLiteBindingTests {
    private func withConnection(_ body: (SQLiteConnection) throws -> Void) async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            try body(try SQLiteConnection.open(dir.appendingPathComponent("bound.sqlite3").path))
        }
    }

    @Test func everyArgumentReadsBackAsBound() async throws {
        try await withConnection { db in
            // Empty, short (kept inside the string itself), long (on the heap), not ASCII, and a
            // substring's copy: every way a Swift string holds its bytes.
            let long = String(repeating: "https://i.example.com/abcdefg.jpg?", count: 40)
            let texts = ["", "a", "fifteen bytes!!", "sixteen bytes!!!", long, "Grüße, 猫 🐈", String(long.dropFirst(7).prefix(100))]
            var arguments: [SQLiteValue] = []
            for (index, text) in texts.enumerated() {
                arguments += [.text(text), .integer(Int64(index)), .null]
            }
            let columns = (1...arguments.count).map { "?\($0) AS c\($0)" }.joined(separator: ", ")
            for _ in 0..<3 {
                let row = try #require(try db.rows("SELECT \(columns)", arguments).first)
                for (index, argument) in arguments.enumerated() {
                    #expect(try row.value("c\(index + 1)") == argument)
                }
            }
        }
    }

    @Test func noBindingOutlivesTheCall() async throws {
        try await withConnection { db in
            try db.script("CREATE TABLE t (a TEXT, b TEXT)")
            let long = String(repeating: "x", count: 1_000)
            try db.execute("INSERT INTO t VALUES (?1, ?2)", [.text(long), .text("short")])
            // The same statement, prepared once, run again without arguments: its parameters are
            // NULL, not the text of the call before (which no longer exists).
            try db.execute("INSERT INTO t VALUES (?1, ?2)")
            let rows = try db.rows("SELECT a, b FROM t ORDER BY rowid")
            #expect(rows.count == 2)
            #expect(try rows[0].value("a") == .text(long))
            #expect(try rows[0].value("b") == .text("short"))
            #expect(try rows[1].value("a") == .null)
            #expect(try rows[1].value("b") == .null)
        }
    }

    @Test func aFailedBindThrowsAndLeavesTheStatementUsable() async throws {
        try await withConnection { db in
            // One parameter, two arguments: the second has no place to go.
            #expect(throws: SQLiteError.self) { try db.rows("SELECT ?1 AS v", [.text("first"), .text("second")]) }
            let row = try #require(try db.rows("SELECT ?1 AS v", [.text("again")]).first)
            #expect(try row.value("v") == .text("again"))
        }
    }
}
