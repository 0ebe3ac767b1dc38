import Foundation
import Logging

/// How a tag's gallery is ordered.
public enum GallerySort: String, Sendable, CaseIterable, Codable {
    case viral, top, time
}

/// The time window of a `top` listing.
public enum GalleryWindow: String, Sendable, CaseIterable, Codable {
    case day, week, month, year, all
}

/// Reads tag listings and albums from the Imgur API (v3).
public struct ImgurClient: Sendable {
    /// How politely to use the API.
    public struct Politeness: Sendable, Equatable {
        /// Most API calls per second; nil for no spacing.
        public var maxRequestsPerSecond: Double?
        /// The longest wait for a rate limit or an overloaded API before stopping (exit 75).
        public var maxWait: Duration
        /// Retries of one call after a server error or a dropped connection.
        public var retry: RetryPolicy

        public init(maxRequestsPerSecond: Double? = nil, maxWait: Duration = .seconds(300), retry: RetryPolicy = RetryPolicy(maxAttempts: 4)) {
            self.maxRequestsPerSecond = maxRequestsPerSecond
            self.maxWait = maxWait
            self.retry = retry
        }
    }

    public var apiBase: String
    private let clientID: String
    private let engine: TransferEngine
    private let logger: Logger
    private let politeness: Politeness
    private let limiter: APIRateLimiter

    /// - Parameters:
    ///   - apiBase: scheme and host, e.g. `https://api.imgur.com`.
    ///   - clientID: the application's Client-ID, sent as `Authorization: Client-ID …`.
    public init(
        apiBase: String, clientID: String, engine: TransferEngine, politeness: Politeness = Politeness(),
        logger: Logger
    ) {
        self.apiBase = apiBase.hasSuffix("/") ? String(apiBase.dropLast()) : apiBase
        self.clientID = clientID
        self.engine = engine
        self.politeness = politeness
        self.logger = logger
        limiter = APIRateLimiter(settings: .init(
            maxRequestsPerSecond: politeness.maxRequestsPerSecond, maxWait: politeness.maxWait))
    }

    /// One page of the tag's gallery; an empty array marks the end of the listing.
    public func tagPage(
        _ tag: String, sort: GallerySort, window: GalleryWindow, page: Int
    ) async throws(ImgurError) -> [GalleryItem] {
        let path = "/3/gallery/t/\(Self.pathSegment(tag))/\(sort.rawValue)/\(window.rawValue)/\(page)"
        let page: ImgurEnvelope<TagPage> = try await get(path)
        return page.data.items
    }

    /// Every image of an album (the endpoint is not paged).
    public func albumImages(_ albumID: String) async throws(ImgurError) -> [ImgurImage] {
        let envelope: ImgurEnvelope<[ImgurImage]> = try await get("/3/album/\(Self.pathSegment(albumID))/images")
        return envelope.data
    }

    private func get<Payload: Decodable>(_ path: String) async throws(ImgurError) -> Payload {
        let response = try await call(apiBase + path)
        do {
            return try JSONDecoder().decode(Payload.self, from: Data(response.body))
        } catch {
            throw ImgurError(kind: .malformedResponse, url: apiBase + path, message: Self.describe(error))
        }
    }

    /// One API call with its retries: network faults, 5xx, 429 and "over capacity" are waited out
    /// (as long as the server asks, within ``Politeness/maxWait``); other errors end it at once.
    private func call(_ url: String) async throws(ImgurError) -> TransferResponse {
        let request = TransferRequest(
            url: url,
            headers: [("Authorization", "Client-ID \(clientID)"), ("Accept", "application/json")],
            destination: .memory(limit: 32 << 20))
        var attempt = 0
        while true {
            attempt += 1
            try await limiter.acquire(url: url)
            logger.debug("GET \(url)")
            let (failure, serverWait): (ImgurError, Duration?)
            switch try await attemptCall(request) {
            case .success(let response): return response
            case .transient(let error, let wait): (failure, serverWait) = (error, wait)
            }
            let wait = politeness.retry.delay(afterAttempt: attempt, retryAfter: serverWait)
            if wait > politeness.maxWait, failure.kind != .unreachable {
                throw ImgurError(
                    kind: .rateLimited, url: url, message: failure.message,
                    retryAfter: Int(wait.components.seconds))
            }
            guard attempt < politeness.retry.maxAttempts else {
                // Still limited after every attempt: a later run should carry on, not a human.
                if failure.kind == .unreachable { throw failure }
                throw ImgurError(kind: .rateLimited, url: url, message: failure.message, retryAfter: failure.retryAfter)
            }
            logger.warning("\(failure); retrying in \(wait)")
            do {
                try await Task.sleep(for: wait)
            } catch {
                throw failure
            }
        }
    }

    private enum Attempt {
        case success(TransferResponse)
        /// A failure worth waiting out, with the wait the server asked for, if it asked.
        case transient(ImgurError, serverWait: Duration?)
    }

    private func attemptCall(_ request: TransferRequest) async throws(ImgurError) -> Attempt {
        let response: TransferResponse
        do {
            response = try await engine.perform(request)
        } catch let error as TransferError {
            let failure = ImgurError(kind: .unreachable, url: request.url, message: error.reasonText)
            guard error.isRetryable else { throw failure }
            return .transient(failure, serverWait: nil)
        } catch {
            throw ImgurError(kind: .unreachable, url: request.url, message: "\(error)")
        }
        await limiter.record(response.headers)
        // Imgur has sent "over capacity" as a 2xx whose envelope says status 1203.
        let bodyStatus = ImgurError.bodyStatus(response.body)
        if response.isSuccess, bodyStatus.map({ (200..<300).contains($0) }) ?? true { return .success(response) }
        let failure = ImgurError(
            kind: .status(response.isSuccess ? bodyStatus ?? response.status : response.status), url: request.url,
            message: ImgurError.message(fromBody: response.body),
            retryAfter: response.headers["Retry-After"].flatMap { Int($0) })
        guard Self.isTransient(response, message: failure.message) else { throw failure }
        var serverWait = failure.retryAfter.map { Duration.seconds($0) }
        if response.status == 429, serverWait == nil { serverWait = await limiter.waitForUserReset() }
        return .transient(failure, serverWait: serverWait)
    }

    /// Worth waiting out: 408, 429, 5xx, and Imgur's "over capacity" (a 403, or status 1203 in
    /// the body).
    static func isTransient(_ response: TransferResponse, message: String) -> Bool {
        switch response.status {
        case 408, 429, 500...599:
            return true
        case 403:
            return message.lowercased().contains("capacity") || ImgurError.bodyStatus(response.body) == 1203
        default:
            return ImgurError.bodyStatus(response.body) == 1203
        }
    }

    /// Percent-encodes a tag or id for use as one path segment.
    static func pathSegment(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// A decoding error as one line naming the JSON path that was wrong.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return keys.isEmpty ? "top level" : String(keys.drop { $0 == "." })
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "missing key '\(key.stringValue)' at \(path(context))"
        case .typeMismatch(let type, let context):
            return "expected \(type) at \(path(context))"
        case .valueNotFound(let type, let context):
            return "null where \(type) was expected at \(path(context))"
        case .dataCorrupted(let context):
            return "invalid JSON at \(path(context)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}
