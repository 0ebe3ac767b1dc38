import Foundation
import NIOCore
import NIOHTTP1

extension FixtureServer {
    /// Answers one request: a fault if one is queued for the path, else the API, a feed or media.
    func respond(to head: HTTPRequestHead, on channel: any Channel) async {
        let rawPath = String(head.uri.split(separator: "?", maxSplits: 1).first ?? "")
        let path = rawPath.removingPercentEncoding ?? rawPath
        let fault = state.withLock { state in
            state.record(head, path: path)
            return state.nextFault(for: path, ranged: head.headers["Range"].first != nil)
        }
        let writer = ResponseWriter(
            server: self, channel: channel, path: path, keepAlive: head.isKeepAlive,
            sendsBody: head.method != .HEAD, fault: fault)
        let required = state.withLock { $0.requiredAuthorization }
        if let required, !path.hasPrefix("/_fixture/"), !path.hasPrefix("/3/"), head.headers["Authorization"].first != required {
            let headers = HTTPHeaders([("WWW-Authenticate", #"Basic realm="fixture""#), ("Content-Type", "text/plain")])
            await writer.send(status: 401, headers: headers, body: ByteBuffer(string: "login required\n"))
        } else if case .respond(let status, let headers, let body)? = fault {
            var fields = HTTPHeaders(headers.map { ($0.key, $0.value) })
            if fields["Content-Type"].isEmpty { fields.add(name: "Content-Type", value: "application/json") }
            await writer.send(status: status, headers: fields, body: ByteBuffer(string: body))
        } else if case .respondWithLines(let status, let lines, let body)? = fault {
            let fields = lines.compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            await writer.send(status: status, headers: HTTPHeaders(fields), body: ByteBuffer(string: body))
        } else if path == "/_fixture/stats" {
            await respondWithStats(writer: writer)
        } else if path == "/_fixture/change" {
            // For scripts: change a file's content (and so its ETag), as a site replacing a file would.
            let target = URLComponents(string: head.uri)?.queryItems?.first { $0.name == "path" }?.value ?? ""
            changeContent(path: target)
            await writer.send(status: 204, headers: HTTPHeaders(), body: ByteBuffer())
        } else if path == "/_fixture/refill" {
            // For scripts: a new "hour" of API budget; the reset the last answers named has passed.
            let calls = URLComponents(string: head.uri)?.queryItems?.first { $0.name == "calls" }?.value.flatMap { Int($0) } ?? 500
            // The daily budget goes on as it was: an hour passing does not refill it.
            let daily = state.withLock { $0.rateLimit.clientRemaining }
            setRateLimit(userRemaining: calls, userReset: 1, clientRemaining: daily, userLimit: calls, refills: false)
            await writer.send(status: 204, headers: HTTPHeaders(), body: ByteBuffer())
        } else if let generated = state.withLock({ $0.generatedBodies[path] }) {
            await writer.send(generated)
        } else if path.hasPrefix("/3/") {
            await respondToAPI(head, path: path, writer: writer)
        } else if path.hasPrefix("/feeds/") {
            await respondWithFeed(path: path, writer: writer)
        } else {
            await respondWithMedia(head, path: path, writer: writer)
        }
    }

    // MARK: - Imgur API

    private func respondToAPI(_ head: HTTPRequestHead, path: String, writer: ResponseWriter) async {
        let authorization = head.headers["Authorization"].first ?? ""
        let clientID = authorization.hasPrefix("Client-ID ") ? String(authorization.dropFirst(10)) : ""
        let (accepted, withinBudget, limit) = state.withLock { state in
            let accepted = !clientID.isEmpty && (state.acceptedClientID.map { $0 == clientID } ?? true)
            let withinBudget = accepted && state.spendAPICall()
            return (accepted, withinBudget, state.rateLimit)
        }
        var headers = HTTPHeaders([("Content-Type", "application/json")])
        headers.add(name: "X-RateLimit-UserLimit", value: String(limit.userLimit))
        headers.add(name: "X-RateLimit-UserRemaining", value: String(limit.userRemaining))
        headers.add(name: "X-RateLimit-UserReset", value: String(limit.userReset))
        headers.add(name: "X-RateLimit-ClientLimit", value: String(limit.clientLimit))
        headers.add(name: "X-RateLimit-ClientRemaining", value: String(limit.clientRemaining))
        guard accepted else {
            await writer.send(status: 403, headers: headers, body: apiError(403, "Authentication required", path))
            return
        }
        guard withinBudget else {
            await writer.send(status: 429, headers: headers, body: apiError(429, "User request limit exceeded", path))
            return
        }
        let parts = path.split(separator: "/").map(String.init)
        let generated: Data? = state.withLock { state in
            if parts.count >= 5, parts[1] == "gallery", parts[2] == "t", let page = Int(parts[parts.count - 1]),
               let tag = state.generatedTags[parts[3]] {
                return tag.pageBody(page) { state.generatedImageSizes[$0] ?? 0 }
            }
            if parts.count == 4, parts[1] == "album", parts[3] == "images" { return state.generatedAlbumBody(parts[2]) }
            if parts.count == 3 { return state.generatedObjectBody(kind: parts[1], id: parts[2]) }
            return nil
        }
        if let generated {
            await writer.send(status: 200, headers: headers, body: ByteBuffer(bytes: generated))
            return
        }
        var file: String?
        if parts.count >= 5, parts[1] == "gallery", parts[2] == "t", let page = Int(parts[parts.count - 1]) {
            let tag = parts[3]
            if fixtureFile("imgur/gallery-t-\(tag)-0.json") == nil {
                await writer.send(status: 404, headers: headers, body: apiError(404, "No tag named \(tag)", path))
                return
            }
            file = "imgur/gallery-t-\(tag)-\(page).json"
            if fixtureFile(file!) == nil {
                let empty = #"{"data":{"name":"\#(tag)","followers":0,"total_items":0,"following":false,"items":[]},"success":true,"status":200}"#
                await writer.send(status: 200, headers: headers, body: ByteBuffer(string: empty))
                return
            }
        } else if parts.count == 4, parts[1] == "album", parts[3] == "images" {
            file = "imgur/album-\(parts[2])-images.json"
        }
        if parts.count == 3, let object = Self.object(kind: parts[1], id: parts[2], in: catalog.objects) {
            await writer.send(status: 200, headers: headers, body: ByteBuffer(bytes: object))
            return
        }
        guard let file, let data = fixtureFile(file) else {
            await writer.send(status: 404, headers: headers, body: apiError(404, "Not found", path))
            return
        }
        await writer.send(status: 200, headers: headers, body: ByteBuffer(bytes: data))
    }

    /// `/3/gallery/{id}`, `/3/album/{id}`, `/3/image/{id}`.
    private static func object(kind: String, id: String, in objects: APIObjects) -> Data? {
        switch kind {
        case "gallery": objects.posts[id]
        case "album": objects.albums[id]
        case "image": objects.images[id]
        default: nil
        }
    }

    private func apiError(_ status: Int, _ message: String, _ path: String) -> ByteBuffer {
        ByteBuffer(string: #"{"data":{"error":"\#(message)","request":"\#(path)","method":"GET"},"success":false,"status":\#(status)}"#)
    }

    private func fixtureFile(_ relativePath: String) -> Data? {
        try? Data(contentsOf: catalog.directory.appendingPathComponent(relativePath))
    }

    // MARK: - Counters

    /// Requests and body bytes per path, as JSON, for scripts that cannot call the Swift API.
    private func respondWithStats(writer: ResponseWriter) async {
        let (requests, bytes) = state.withLock { ($0.requestCounts, $0.bodyBytesSent) }
        var paths: [String: [String: Int]] = [:]
        for (path, count) in requests where path != "/_fixture/stats" {
            paths[path] = ["requests": count, "bodyBytes": bytes[path, default: 0]]
        }
        let object: [String: Any] = ["paths": paths, "totalBodyBytes": bytes.values.reduce(0, +)]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        await writer.send(status: 200, headers: HTTPHeaders([("Content-Type", "application/json")]), body: ByteBuffer(bytes: data))
    }

    // MARK: - Feeds

    private func respondWithFeed(path: String, writer: ResponseWriter) async {
        if let bytes = state.withLock({ $0.feeds[path] }) {
            // As set, but for `{{base}}`: a feed in another encoding, or damaged, is served byte
            // for byte.
            var served: [UInt8] = []
            var rest = bytes[...]
            let placeholder = Array("{{base}}".utf8)
            while let found = rest.firstRange(of: placeholder) {
                served += rest[..<found.lowerBound] + Array(baseURL.utf8)
                rest = rest[found.upperBound...]
            }
            served += rest
            await writer.send(status: 200, headers: HTTPHeaders([("Content-Type", "application/atom+xml; charset=utf-8")]), body: ByteBuffer(bytes: served))
            return
        }
        guard let data = fixtureFile(String(path.dropFirst())) else {
            await writer.send(status: 404, headers: HTTPHeaders(), body: ByteBuffer(string: "no such feed"))
            return
        }
        // Feeds name their enclosures relative to wherever the server happens to listen.
        let text = String(decoding: data, as: UTF8.self).replacingOccurrences(of: "{{base}}", with: baseURL)
        let headers = HTTPHeaders([("Content-Type", "application/atom+xml; charset=utf-8")])
        await writer.send(status: 200, headers: headers, body: ByteBuffer(string: text))
    }

    // MARK: - Media

    private func respondWithMedia(_ head: HTTPRequestHead, path: String, writer: ResponseWriter) async {
        let (removed, served) = state.withLock { state in
            let id = FixtureCatalog.imageID(ofMediaPath: path)
            let removed = path != "/removed.png" && id.map { state.removedIDs.contains($0) } ?? false
            return (removed, removed ? nil : state.content(for: path))
        }
        if removed {
            let headers = HTTPHeaders([("Location", baseURL + "/removed.png")])
            await writer.send(status: 302, headers: headers, body: ByteBuffer())
            return
        }
        guard let served else {
            await writer.send(status: 404, headers: HTTPHeaders(), body: ByteBuffer(string: "not found"))
            return
        }
        var etag = served.etag
        var isConditional = true
        if case .unconditional(let replacement)? = writer.fault {
            etag = replacement ?? etag
            isConditional = false
        }
        var headers = HTTPHeaders([
            ("Content-Type", served.contentType), ("ETag", etag),
            ("Last-Modified", served.lastModified), ("Accept-Ranges", "bytes"),
        ])
        if isConditional, Self.isNotModified(head, served) {
            await writer.send(status: 304, headers: headers, body: ByteBuffer())
            return
        }
        let size = served.body.readableBytes
        guard writer.fault != .ignoreRange, isConditional, let range = head.headers["Range"].first.flatMap(ByteRange.init),
              Self.validatorMatches(head.headers["If-Range"].first, served)
        else {
            await writer.send(status: 200, headers: headers, body: served.body)
            return
        }
        guard range.first < size else {
            headers.add(name: "Content-Range", value: "bytes */\(size)")
            await writer.send(status: 416, headers: headers, body: ByteBuffer())
            return
        }
        let last = min(range.last ?? size - 1, size - 1)
        let total = writer.fault == .unknownTotal ? "*" : String(size)
        headers.add(name: "Content-Range", value: "bytes \(range.first)-\(last)/\(total)")
        let part = served.body.getSlice(at: served.body.readerIndex + range.first, length: last - range.first + 1)!
        await writer.send(status: 206, headers: headers, body: part)
    }

    /// Whether the request's conditions hold the served content as current (RFC 9110 §13.2.2):
    /// If-None-Match by weak comparison when present, else If-Modified-Since.
    private static func isNotModified(_ head: HTTPRequestHead, _ served: ServedContent) -> Bool {
        if let tags = head.headers["If-None-Match"].first {
            let weakless = { (tag: Substring) in tag.hasPrefix("W/") ? tag.dropFirst(2) : tag }
            return tags.split(separator: ",").contains { tag in
                let tag = tag.trimmingCharacters(in: .whitespaces)[...]
                return tag == "*" || weakless(tag) == weakless(served.etag[...])
            }
        }
        guard let since = head.headers["If-Modified-Since"].first.flatMap(ServerState.parseHTTPDate),
              let modified = ServerState.parseHTTPDate(served.lastModified)
        else { return false }
        return modified <= since
    }

    /// If-Range as nginx applies it: a quoted value against the ETag, anything else against
    /// Last-Modified, both byte for byte; no If-Range always matches.
    private static func validatorMatches(_ ifRange: String?, _ served: ServedContent) -> Bool {
        guard let ifRange else { return true }
        return ifRange.hasPrefix("\"") ? ifRange == served.etag : ifRange == served.lastModified
    }
}

/// The single range `bytes=FIRST-` or `bytes=FIRST-LAST` of a Range header.
struct ByteRange {
    var first: Int
    var last: Int?

    init?(_ header: String) {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let bounds = header.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int(bounds[0]) else { return nil }
        self.first = first
        last = bounds[1].isEmpty ? nil : Int(bounds[1])
        if let last, last < first { return nil }
    }
}
