import Foundation
import NIOCore
import NIOHTTP1

/// The bytes served at a media path for one version of it, with their validators.
struct ServedContent: Sendable {
    var version: Int
    var body: ByteBuffer
    var etag: String
    var lastModified: String
    var contentType: String
}

/// The API budget the server reports in X-RateLimit-* headers and enforces with 429s.
struct RateLimit: Sendable {
    var userLimit = 500
    var userRemaining = 500
    /// When the user budget refills, as Imgur does hourly.
    var userResetAt = Date().addingTimeInterval(3600)
    var clientLimit = 12_500
    var clientRemaining = 12_500
    /// Whether the budget refills by itself at the reset; when not, only `setRateLimit` refills it.
    var refills = true

    /// Seconds until the user budget refills, as Imgur sends it in X-RateLimit-UserReset.
    /// A budget that only a test refills reports its reset as still ahead until it does.
    var userReset: Int { max(Int(userResetAt.timeIntervalSinceNow.rounded(.up)), refills ? 0 : 1) }

    mutating func refillIfDue() {
        guard refills, Date() >= userResetAt else { return }
        userRemaining = userLimit
        userResetAt = Date().addingTimeInterval(3600)
    }
}

/// Everything mutable about the server, behind one lock.
struct ServerState: Sendable {
    var media: [String: MediaResource]
    var removedIDs: Set<String>
    var faults: [String: [QueuedFault]] = [:]
    /// Every media response's rate, each connection on its own, unless a fault says otherwise:
    /// a CDN that limits each connection rather than each client.
    var mediaThrottle: Int?
    var requestCounts: [String: Int] = [:]
    var bodyBytesSent: [String: Int] = [:]
    var log: [RecordedRequest] = []
    var contentCache: [String: ServedContent] = [:]
    var rateLimit = RateLimit()
    var acceptedClientID: String?
    /// The `Authorization` header feeds and media require (a private feed's Basic login); nil for none.
    var requiredAuthorization: String?
    var generatedTags: [String: GeneratedTag] = [:]
    var generatedAlbums: [String: [String]] = [:]
    var generatedImageSizes: [String: Int] = [:]
    var generatedSerial = 0
    var generatedBodies: [String: GeneratedBody] = [:]
    /// Feed documents served instead of the fixture files, by path.
    var feeds: [String: [UInt8]] = [:]

    /// The ETag Imgur's CDN sends for its removed-image placeholder.
    static let removedETag = "\"d835884373f4d6c8f24742ceabe74946\""

    mutating func record(_ head: HTTPRequestHead, path: String) {
        requestCounts[path, default: 0] += 1
        var headers: [String: String] = [:]
        for (name, value) in head.headers { headers[name] = value }
        log.append(RecordedRequest(method: head.method.rawValue, path: path, headers: headers))
    }

    mutating func nextFault(for path: String, ranged: Bool) -> Fault? {
        guard var queue = faults[path], !queue.isEmpty else {
            guard let mediaThrottle, media[path] != nil else { return nil }
            return .throttle(bytesPerSecond: mediaThrottle)
        }
        if ranged && queue[0].sparesRangedRequests { return nil }
        let fault = queue.removeFirst().fault
        faults[path] = queue
        return fault
    }

    mutating func content(for path: String) -> ServedContent? {
        guard let served = media[path] else { return nil }
        let origin = served.sameAs ?? path
        guard let resource = media[origin] else { return nil }
        if let cached = contentCache[path], cached.version == resource.version { return cached }
        let body = DeterministicContent.make(path: origin, version: resource.version, size: resource.size)
        let modified = Date(timeIntervalSince1970: 1_451_606_400 + Double(resource.version) * 86_400)
        let content = ServedContent(
            version: resource.version,
            body: body,
            etag: path == "/removed.png" ? Self.removedETag : DeterministicContent.md5ETag(body),
            lastModified: Self.httpDate(modified),
            contentType: resource.contentType)
        contentCache[path] = content
        return content
    }

    /// Takes one API call from the budget; false once it is spent.
    mutating func spendAPICall() -> Bool {
        rateLimit.refillIfDue()
        guard rateLimit.userRemaining > 0, rateLimit.clientRemaining > 0 else { return false }
        rateLimit.userRemaining -= 1
        rateLimit.clientRemaining -= 1
        return true
    }

    static func parseHTTPDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }

    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}

/// A fault waiting for its request.
struct QueuedFault {
    var fault: Fault
    /// A request with a Range header, while this is first in its path's queue, is answered as
    /// though no fault were queued (at the media throttle, if one is set), and leaves the queue
    /// as it was.
    var sparesRangedRequests: Bool
}
