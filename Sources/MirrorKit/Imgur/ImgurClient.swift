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
    public var apiBase: String
    private let clientID: String
    private let engine: TransferEngine
    private let logger: Logger

    /// - Parameters:
    ///   - apiBase: scheme and host, e.g. `https://api.imgur.com`.
    ///   - clientID: the application's Client-ID, sent as `Authorization: Client-ID …`.
    public init(apiBase: String, clientID: String, engine: TransferEngine, logger: Logger) {
        self.apiBase = apiBase.hasSuffix("/") ? String(apiBase.dropLast()) : apiBase
        self.clientID = clientID
        self.engine = engine
        self.logger = logger
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
        let url = apiBase + path
        let request = TransferRequest(
            url: url,
            headers: [("Authorization", "Client-ID \(clientID)"), ("Accept", "application/json")],
            destination: .memory(limit: 32 << 20))
        logger.debug("GET \(path)")
        let response: TransferResponse
        do {
            response = try await engine.perform(request)
        } catch let error as TransferError {
            throw ImgurError(kind: .unreachable, url: url, message: error.reasonText)
        } catch {
            throw ImgurError(kind: .unreachable, url: url, message: "\(error)")
        }
        guard response.isSuccess else {
            throw ImgurError(
                kind: .status(response.status), url: url,
                message: ImgurError.message(fromBody: response.body),
                retryAfter: response.headers["Retry-After"].flatMap { Int($0) })
        }
        do {
            return try JSONDecoder().decode(Payload.self, from: Data(response.body))
        } catch {
            throw ImgurError(kind: .malformedResponse, url: url, message: Self.describe(error))
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

extension TransferError {
    /// The reason alone, without the URL (for messages that name the URL themselves).
    var reasonText: String {
        switch reason {
        case .transport(_, let message): message
        default: description
        }
    }
}
