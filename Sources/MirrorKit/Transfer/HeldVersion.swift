/// The validators of a copy of a file the mirror holds already: a conditional GET with them is
/// answered 304 Not Modified, bodiless, while the server's file is still that copy.
package struct HeldVersion: Sendable, Equatable {
    var etag: String?
    var lastModified: String?

    init(etag: String?, lastModified: String?) {
        self.etag = etag
        self.lastModified = lastModified
    }

    /// `If-None-Match` with the ETag, else `If-Modified-Since` with the date; never both: a server
    /// that gets both may want both to match (nginx does), and the ETag says more (RFC 9110
    /// §13.1.3 lets it take precedence). Nothing when the copy came without validators.
    var requestHeaders: [(name: String, value: String)] {
        if let etag { return [("If-None-Match", etag)] }
        if let lastModified { return [("If-Modified-Since", lastModified)] }
        return []
    }
}
