#ifndef MIRROR_CSQLITE_SHIM_H
#define MIRROR_CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import: it tells
// sqlite3_bind_text to copy the string before the call returns.
static inline int mirror_sqlite3_bind_text_copy(sqlite3_stmt *statement, int index, const char *text) {
    return sqlite3_bind_text(statement, index, text, -1, SQLITE_TRANSIENT);
}

#endif
