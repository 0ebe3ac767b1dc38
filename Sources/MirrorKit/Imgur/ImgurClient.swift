import FoundationEssentials
import Logging

/// How a tag's gallery is ordered.
package enum GallerySort: String, Sendable, CaseIterable, Codable {
    case viral, top, time
}

/// The time window of a `top` listing.
package enum GalleryWindow: String, Sendable, CaseIterable, Codable {
    case day, week, month, year, all
}

/// Reads tag listings and albums from the Imgur API (v3).
package struct ImgurClient: Sendable {
    /// How politely to use the API.
    package struct Politeness: Sendable, Equatable {
        /// Most API calls per second; nil for no spacing.
        var maxRequestsPerSecond: Double?
        /// The longest wait for a rate limit or an overloaded API before stopping (exit 75).
        var maxWait: Duration
        /// Retries of one call after a server error or a dropped connection.
        var retry: RetryPolicy

        /// The longest wait for the API unless told otherwise.
        static let defaultMaxWait: Duration = .seconds(300)

        init(maxRequestsPerSecond: Double? = nil, maxWait: Duration = defaultMaxWait, retry: RetryPolicy = RetryPolicy(maxAttempts: 4)) {
            self.maxRequestsPerSecond = maxRequestsPerSecond
            self.maxWait = maxWait
            self.retry = retry
        }
    }

    var apiBase: String
    private let clientID: String
    private let engine: TransferEngine
    private let logger: Logger
    private let politeness: Politeness
    private let limiter: APIRateLimiter
    /// What the retries and the budget's waits wait on, and what "now" is to the budget.
    private let clock: any RunClock

    /// - Parameters:
    ///   - apiBase: scheme and host, e.g. `https://api.imgur.com`.
    ///   - clientID: the application's Client-ID, sent as `Authorization: Client-ID …`.
    ///   - startingBudget: the budget the last run saw; used while its reset has not passed.
    package init(
        apiBase: String, clientID: String, engine: TransferEngine, politeness: Politeness = Politeness(),
        startingBudget: APIBudget? = nil, clock: any RunClock = SystemClock(), logger: Logger
    ) {
        self.clock = clock
        self.apiBase = apiBase.hasSuffix("/") ? String(apiBase.dropLast()) : apiBase
        self.clientID = clientID
        self.engine = engine
        self.politeness = politeness
        self.logger = logger
        limiter = APIRateLimiter(settings: .init(
            maxRequestsPerSecond: politeness.maxRequestsPerSecond, maxWait: politeness.maxWait),
            startingFrom: startingBudget, application: APIRateLimiter.fingerprint(ofClientID: clientID), clock: clock)
    }

    /// The API budget as the last answer reported it.
    func budget() async -> APIBudget {
        await limiter.current
    }

    /// Starts from the budget an earlier run or another worker of the budget group saw (kept
    /// while its reset has not passed, taken when fresher than this run's), so that a spent
    /// budget costs no call to find out.
    func adopt(_ budget: APIBudget) async {
        await limiter.adopt(budget)
    }

    /// Calls this run may still make before the reset, the reserve kept; nil until an answer says.
    func callsLeft() async -> Int? {
        await limiter.callsLeft
    }

    /// API calls made so far through this client.
    func callsMade() async -> Int {
        await limiter.callsMade
    }

    /// One page of the tag's gallery; no items marks the end of the listing.
    func tagListing(
        _ tag: String, sort: GallerySort, window: GalleryWindow, page: Int
    ) async throws(ImgurError) -> TagPage {
        let path = "/3/gallery/t/\(Self.pathSegment(tag))/\(sort.rawValue)/\(window.rawValue)/\(page)"
        let page: ImgurEnvelope<TagPage> = try await get(path)
        return page.data
    }

    /// The entries of one page of the tag's gallery; an empty array marks the end of the listing.
    func tagPage(
        _ tag: String, sort: GallerySort, window: GalleryWindow, page: Int
    ) async throws(ImgurError) -> [GalleryItem] {
        try await tagListing(tag, sort: sort, window: window, page: page).items
    }

    /// Every image of an album (the endpoint is not paged).
    func albumImages(_ albumID: String) async throws(ImgurError) -> [ImgurImage] {
        let envelope: ImgurEnvelope<[ImgurImage]> = try await get("/3/album/\(Self.pathSegment(albumID))/images")
        return envelope.data
    }

    /// An album with its title, and its images when the answer embeds them all.
    func album(_ albumID: String) async throws(ImgurError) -> ImgurAlbum {
        let envelope: ImgurEnvelope<ImgurAlbum> = try await get("/3/album/\(Self.pathSegment(albumID))")
        return envelope.data
    }

    /// A gallery post: an image, or an album (whose images may not all be embedded).
    func galleryPost(_ id: String) async throws(ImgurError) -> GalleryItem {
        let envelope: ImgurEnvelope<GalleryItem> = try await get("/3/gallery/\(Self.pathSegment(id))")
        return envelope.data
    }

    /// One image, in or out of the gallery.
    func image(_ imageID: String) async throws(ImgurError) -> ImgurImage {
        let envelope: ImgurEnvelope<ImgurImage> = try await get("/3/image/\(Self.pathSegment(imageID))")
        return envelope.data
    }

    private func get<Payload: Decodable>(_ path: String) async throws(ImgurError) -> Payload {
        let response = try await call(apiBase + path)
        do {
            return try Self.decode(Payload.self, from: response.body)
        } catch {
            throw ImgurError(kind: .malformedResponse, url: apiBase + path, message: Self.describe(error))
        }
    }

    /// One API call with its retries: network faults, 5xx, 429 and "over capacity" are waited out
    /// (as long as the server asks, within ``Politeness/maxWait`` for one wait and the retry
    /// policy's total); other errors end it at once.
    private func call(_ url: String) async throws(ImgurError) -> TransferResponse {
        let request = TransferRequest(
            url: url,
            headers: [("Authorization", "Client-ID \(clientID)"), ("Accept", "application/json")],
            destination: .memory(limit: 32 << 20))
        var policy = politeness.retry
        policy.maxTotalWait = max(policy.maxTotalWait, politeness.maxWait)
        do {
            return try await policy.run(
                maxSingleWait: politeness.maxWait, clock: clock,
                giveUp: { failure, reason in Self.gaveUp(failure, reason, url: url) },
                onRetry: { failure, wait in logger.warning("\(failure); retrying in \(DurationText.spoken(wait))") }
            ) { _ throws(ImgurError) in
                try await limiter.acquire(url: url)
                logger.debug("GET \(url)")
                return try await attemptCall(request)
            }
        } catch {
            // Refused for longer than this run waits (429, "over capacity"): so are the next
            // calls, of this source, the run's others and the runs before the time said.
            if error.kind == .rateLimited, error.lastStatus != nil, error.isAPIWide { await limiter.pause(forSeconds: error.retryAfter) }
            throw error
        }
    }

    /// The error a call ends with when the retry policy stops: an API that is still limiting or
    /// overloaded means "a later run carries on" (exit 75); one that never answered stays unreachable.
    static func gaveUp(_ failure: ImgurError, _ reason: RetryPolicy.GiveUp, url: String) -> ImgurError {
        switch reason {
        case .cancelled:
            return failure
        case .attemptsExhausted:
            if failure.kind == .unreachable { return failure }
            return ImgurError(
                kind: .rateLimited, url: url, message: failure.message, retryAfter: failure.retryAfter,
                lastStatus: failure.status)
        case .waitTooLong(let wait), .totalWaitExceeded(let wait):
            if failure.kind == .unreachable { return failure }
            return ImgurError(
                kind: .rateLimited, url: url, message: failure.message,
                retryAfter: max(failure.retryAfter ?? 0, Int(wait.components.seconds)), lastStatus: failure.status)
        }
    }

    private func attemptCall(_ request: TransferRequest) async throws(ImgurError) -> RetryPolicy.Step<TransferResponse, ImgurError> {
        let response: TransferResponse
        do {
            response = try await engine.perform(request)
        } catch let error as TransferError {
            if case .bodyTooLarge = error.reason {
                throw ImgurError(kind: .malformedResponse, url: request.url, message: error.reasonText)
            }
            let failure = ImgurError(kind: .unreachable, url: request.url, message: error.reasonText)
            guard error.isRetryable else { throw failure }
            return .retry(failure, retryAfter: nil)
        } catch {
            throw ImgurError(kind: .unreachable, url: request.url, message: "\(error)")
        }
        await limiter.record(response.headers)
        // Imgur has sent "over capacity" as a 2xx whose envelope says status 1203.
        let bodyStatus = ImgurError.bodyStatus(response.body)
        if response.isSuccess, bodyStatus.map({ (200..<300).contains($0) }) ?? true { return .success(response) }
        var serverWait = RetryPolicy.retryAfter(response.headers["Retry-After"], now: clock.now)
        let failure = ImgurError(
            kind: .status(response.isSuccess ? bodyStatus ?? response.status : response.status), url: request.url,
            message: ImgurError.message(fromBody: response.body),
            retryAfter: serverWait.map { Int($0.components.seconds) + ($0.components.attoseconds > 0 ? 1 : 0) })
        guard Self.isTransient(response, message: failure.message) else { throw failure }
        if response.status == 429, serverWait == nil { serverWait = await limiter.waitForUserReset() }
        return .retry(failure, retryAfter: serverWait)
    }

    /// Worth waiting out: 408, 429, 5xx, and Imgur's "over capacity" (a 403, or status 1203 in
    /// the body).
    static func isTransient(_ response: TransferResponse, message: String) -> Bool {
        if RetryPolicy.isRetryable(status: response.status) { return true }
        switch response.status {
        case 403:
            return message.lowercased().contains("capacity") || ImgurError.bodyStatus(response.body) == 1203
        default:
            return ImgurError.bodyStatus(response.body) == 1203
        }
    }

    /// Percent-encodes a tag or id for use as one path segment.
    static func pathSegment(_ text: String) -> String {
        text.percentEncodedSegment
    }

    /// An API body decoded as `Payload`, its depth checked first (``JSONDocument``): the server
    /// chooses the body. Answers nest about six deep.
    static func decode<Payload: Decodable>(_ type: Payload.Type, from body: [UInt8]) throws -> Payload {
        try JSONDocument.decode(Payload.self, from: body)
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
            return (context.codingPath.isEmpty ? "invalid JSON at " : "invalid value at ") + "\(path(context)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}
