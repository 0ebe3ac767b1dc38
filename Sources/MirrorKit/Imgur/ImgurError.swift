import FoundationEssentials

/// A failure talking to the Imgur API, with the message the API gave where it gave one.
package struct ImgurError: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// The API answered with an error status.
        case status(Int)
        /// The API answered 2xx with a body that is not the expected JSON.
        case malformedResponse
        /// The request never got an answer.
        case unreachable
        /// The API budget is spent, or the API asks for a longer pause than allowed: stop now and
        /// let a later run carry on.
        case rateLimited
    }

    package var kind: Kind
    /// The API path or URL concerned.
    var url: String
    /// The API's own words, or what was wrong with its answer.
    var message: String
    /// Seconds the API asked us to wait (Retry-After), if it did.
    var retryAfter: Int?
    /// For ``Kind/rateLimited``: the status the API kept answering (429, 503, …); nil when the
    /// budget itself is spent and no call was made.
    var lastStatus: Int? = nil

    /// The API says the album, post or image does not exist (or no longer does).
    var isNotFound: Bool { kind == .status(404) || kind == .status(410) }

    /// The API said "not now" to every call (the budget, a 429, "over capacity", no answer at
    /// all), not only to one album or page.
    var isAPIWide: Bool {
        guard kind == .rateLimited else { return kind == .unreachable }
        guard let lastStatus else { return true }
        return lastStatus == 429 || lastStatus == 403 || lastStatus == 1203
    }

    package var description: String {
        switch kind {
        case .status(let status): "Imgur API \(url): HTTP \(status): \(message)"
        case .malformedResponse: "Imgur API \(url): unexpected response: \(message)"
        case .unreachable: "Imgur API \(url) unreachable: \(message)"
        case .rateLimited where isAPIWide:
            "Imgur API rate limit at \(url): \(message)"
                + (retryAfter.map { "; resets in \($0) s" } ?? "") + "; stopping so a later run can carry on"
        case .rateLimited:
            "Imgur API \(url) keeps answering HTTP \(lastStatus ?? 0): \(message); stopping so a later run can carry on"
        }
    }

    /// The HTTP (or in-body) status of a ``Kind/status(_:)`` error.
    var status: Int? {
        if case .status(let status) = kind { return status }
        return nil
    }

    /// Reads the error message out of any of the shapes Imgur uses: `data.error` as a string or
    /// as an object with `message`, or a gateway `errors` array with `detail`. Falls back to the
    /// start of the body for HTML pages and the like.
    static func message(fromBody body: [UInt8]) -> String {
        guard let json = JSONValue.parse(body), json.object != nil else {
            let text = String(decoding: body.prefix(120), as: UTF8.self)
                .split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).joined(separator: " ")
                .trimming(.spaces)
            return text.isEmpty ? "empty body" : "non-JSON body: \(text)"
        }
        if let error = json["data"]?["error"] {
            if let text = error.string { return text }
            if let text = error["message"]?.string { return text }
        }
        if let first = json["errors"]?.array?.first, first.object != nil {
            return first["detail"]?.string ?? first["status"]?.string ?? "unknown error"
        }
        return "no error message in the body"
    }

    /// An in-body status that differs from the HTTP one (1203, "over capacity", arrives as 403).
    /// Read from every answer, a page of a tag included: the two fields are decoded as
    /// themselves, since reading the page as any JSON (``JSONValue``) cost three times its decoding.
    static func bodyStatus(_ body: [UInt8]) -> Int? {
        guard let envelope = try? JSONDocument.decode(EnvelopeStatus.self, from: body) else { return nil }
        return envelope.status ?? envelope.firstErrorCode.flatMap { Int($0) }
    }
}

/// An answer's in-body status (`status`, a whole number) and the code of its first error
/// (`errors[0].code`, a string); either absent when it is not there in that form.
private struct EnvelopeStatus: Decodable {
    var status: Int?
    var firstErrorCode: String?

    private enum CodingKeys: String, CodingKey {
        case status, errors, code
    }

    /// An entry of `errors`, whatever it is: only an object's string `code` is kept.
    private struct ErrorEntry: Decodable {
        var code: String?

        init(from decoder: any Decoder) throws {
            code = try? decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(String.self, forKey: .code)
        }
    }

    init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        let number: Double? = try? fields.decodeIfPresent(Double.self, forKey: .status)
        status = number.flatMap { Int(exactly: $0) }
        let errors: [ErrorEntry]? = try? fields.decodeIfPresent([ErrorEntry].self, forKey: .errors)
        firstErrorCode = errors?.first?.code
    }
}
