import CSQLite

/// A value bound to, or read from, an SQLite statement.
enum SQLiteValue: Sendable, Equatable {
    case null
    case integer(Int64)
    case text(String)

    var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }
}

extension SQLiteValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    init(stringLiteral value: String) { self = .text(value) }
    init(integerLiteral value: Int64) { self = .integer(value) }

    init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    init(_ value: Int?) { self = value.map { .integer(Int64($0)) } ?? .null }
    init(_ value: Int64?) { self = value.map { .integer($0) } ?? .null }
}

/// What SQLite said when a statement failed.
struct SQLiteError: Error, CustomStringConvertible {
    var description: String
    var code: Int32 = SQLITE_ERROR

    /// The file is not (or no longer) a database: setting it aside loses nothing usable.
    var isDamage: Bool { code & 0xFF == SQLITE_NOTADB || code & 0xFF == SQLITE_CORRUPT }
}

/// One SQLite connection, owned by one actor. Every statement's result is checked: a failed write
/// is an error for the caller, never a silent loss.
final class SQLiteConnection {
    let handle: OpaquePointer
    /// Prepared statements by their text, filed by its length: a file's bookkeeping runs the same
    /// few statements thousands of times, and parsing them again each time was a visible share of
    /// a run. Not a dictionary keyed by the text: hashing a statement of hundreds of bytes at
    /// every call cost more than its lookup; two texts of one storage compare equal at once.
    private var statements: [Int: [(sql: String, statement: OpaquePointer)]] = [:]
    /// The column names of each prepared statement, read once: a query run for every file
    /// would otherwise make a string per column per run. Read again once SQLite has prepared the
    /// statement anew (after a schema change, by this connection or another).
    private var columnNames: [OpaquePointer: (names: [String], preparations: Int32)] = [:]

    private init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        for sameLength in statements.values {
            for (_, statement) in sameLength { sqlite3_finalize(statement) }
        }
        sqlite3_close_v2(handle)
    }

    static func open(_ path: String, readOnly: Bool = false) throws(SQLiteError) -> SQLiteConnection {
        var db: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_FULLMUTEX
        let status = sqlite3_open_v2(path, &db, flags, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(db)
            throw SQLiteError(description: message, code: status)
        }
        sqlite3_busy_timeout(db, 5000)
        return SQLiteConnection(handle: db)
    }

    /// Runs one statement; returns every row it yields.
    @discardableResult
    func rows(_ sql: String, _ arguments: [SQLiteValue] = []) throws(SQLiteError) -> [SQLiteRow] {
        let statement = try prepared(sql)
        defer {
            sqlite3_reset(statement)
            // Text was bound in place: no binding may outlive this call.
            sqlite3_clear_bindings(statement)
        }
        return try binding(arguments, from: 0, to: statement) { () throws(SQLiteError) in try steps(statement) }
    }

    /// Binds `arguments[index...]` and runs `body` with them bound. Text is bound in place
    /// (`SQLITE_STATIC`), without the copy `SQLITE_TRANSIENT` makes: each string's bytes stay put
    /// until its `withCString` returns, and `body`, which steps the statement, runs inside all of
    /// them. (A short string is NUL-terminated on the stack, a long one is already.)
    private func binding<T>(
        _ arguments: [SQLiteValue], from index: Int, to statement: OpaquePointer, _ body: () throws(SQLiteError) -> T
    ) throws(SQLiteError) -> T {
        guard index < arguments.count else { return try body() }
        let position = Int32(index + 1)
        switch arguments[index] {
        case .null:
            guard sqlite3_bind_null(statement, position) == SQLITE_OK else { throw lastError() }
        case .integer(let value):
            guard sqlite3_bind_int64(statement, position, value) == SQLITE_OK else { throw lastError() }
        case .text(let value):
            // `withCString` rethrows untyped: the error comes out as a value.
            let result = value.withCString { text -> Result<T, SQLiteError> in
                guard sqlite3_bind_text(statement, position, text, -1, nil) == SQLITE_OK else { return .failure(lastError()) }
                return Result { () throws(SQLiteError) in try binding(arguments, from: index + 1, to: statement, body) }
            }
            return try result.get()
        }
        return try binding(arguments, from: index + 1, to: statement, body)
    }

    /// Steps a bound statement to its end; every row it yields.
    private func steps(_ statement: OpaquePointer) throws(SQLiteError) -> [SQLiteRow] {
        var result: [SQLiteRow] = []
        var columns: Int32 = 0
        var names: [String] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_DONE { break }
            guard step == SQLITE_ROW else { throw lastError() }
            if result.isEmpty {
                // Read once a row is there: a statement prepared before a schema change is
                // prepared again by its first step, and only then names the columns it now has.
                columns = sqlite3_column_count(statement)
                names = self.names(of: statement, columns: columns)
            }
            result.append(SQLiteRow(names: names, values: (0..<columns).map { column in
                switch sqlite3_column_type(statement, column) {
                case SQLITE_NULL: .null
                case SQLITE_INTEGER: .integer(sqlite3_column_int64(statement, column))
                default: sqlite3_column_text(statement, column).map { .text(String(cString: $0)) } ?? .null
                }
            }))
        }
        return result
    }

    private func names(of statement: OpaquePointer, columns: Int32) -> [String] {
        let preparations = sqlite3_stmt_status(statement, SQLITE_STMTSTATUS_REPREPARE, 0)
        if let known = columnNames[statement], known.preparations == preparations, known.names.count == columns {
            return known.names
        }
        let names = (0..<columns).map { sqlite3_column_name(statement, $0).map { String(cString: $0) } ?? "" }
        columnNames[statement] = (names, preparations)
        return names
    }

    private func prepared(_ sql: String) throws(SQLiteError) -> OpaquePointer {
        let length = sql.utf8.count
        if let known = statements[length]?.first(where: { $0.sql == sql }) { return known.statement }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else { throw lastError() }
        statements[length, default: []].append((sql, statement))
        return statement
    }

    /// Runs one statement that returns nothing worth reading.
    func execute(_ sql: String, _ arguments: [SQLiteValue] = []) throws(SQLiteError) {
        try rows(sql, arguments)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// Runs every statement of a script (schema changes); no arguments.
    func script(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        guard status == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? "error \(status)"
            sqlite3_free(message)
            throw SQLiteError(description: text, code: sqlite3_extended_errcode(handle))
        }
    }

    /// Runs `body` in one transaction: all of its writes land, or none.
    func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func lastError() -> SQLiteError {
        SQLiteError(description: String(cString: sqlite3_errmsg(handle)), code: sqlite3_extended_errcode(handle))
    }
}

/// One row of a query, read by column name: a value of the wrong kind, or a NULL where the
/// schema allows none, is an error naming the column, never taken for `""` or 0.
struct SQLiteRow: Sendable, RandomAccessCollection {
    let names: [String]
    let values: [SQLiteValue]

    var startIndex: Int { values.startIndex }
    var endIndex: Int { values.endIndex }
    subscript(position: Int) -> SQLiteValue { values[position] }

    /// The value of column `name` as the query named it (`AS name` for an expression).
    func value(_ name: String) throws(SQLiteError) -> SQLiteValue {
        guard let index = names.firstIndex(of: name) else {
            throw SQLiteError(description: "the query selects no column '\(name)'", code: SQLITE_MISMATCH)
        }
        return values[index]
    }

    func text(_ name: String) throws(SQLiteError) -> String {
        guard let text = try optionalText(name) else { throw Self.unexpectedNull(name) }
        return text
    }

    func optionalText(_ name: String) throws(SQLiteError) -> String? {
        switch try value(name) {
        case .null: return nil
        case .text(let text): return text
        case .integer: throw SQLiteError(description: "column '\(name)' holds a number where text belongs", code: SQLITE_MISMATCH)
        }
    }

    func integer(_ name: String) throws(SQLiteError) -> Int64 {
        guard let integer = try optionalInteger(name) else { throw Self.unexpectedNull(name) }
        return integer
    }

    func optionalInteger(_ name: String) throws(SQLiteError) -> Int64? {
        switch try value(name) {
        case .null: return nil
        case .integer(let integer): return integer
        case .text: throw SQLiteError(description: "column '\(name)' holds text where a number belongs", code: SQLITE_MISMATCH)
        }
    }

    func optionalInt(_ name: String) throws(SQLiteError) -> Int? {
        try optionalInteger(name).map { Int(clamping: $0) }
    }

    private static func unexpectedNull(_ name: String) -> SQLiteError {
        SQLiteError(description: "column '\(name)' is NULL where a value belongs", code: SQLITE_MISMATCH)
    }
}
