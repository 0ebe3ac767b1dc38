import Foundation
import Logging

/// A downloaded file, complete and verified, waiting in the partial store to be committed.
public struct FetchedFile: Sendable {
    public var url: String
    public var path: String
    public var length: Int64
    /// Bytes this fetch received over the network (less than `length` after a resume).
    public var bytesReceived: Int64

    public init(url: String, path: String, length: Int64, bytesReceived: Int64) {
        self.url = url
        self.path = path
        self.length = length
        self.bytesReceived = bytesReceived
    }
}

/// Fetches one URL into the partial store, resuming what earlier attempts left, retrying what may
/// pass, and checking that what arrived is whole before handing it on.
public struct Downloader: Sendable {
    let engine: TransferEngine
    let partials: PartialStore
    let retry: RetryPolicy
    let logger: Logger

    /// The ETag Imgur's CDN gives its "this image was removed" placeholder.
    static let removedPlaceholderETag = "\"d835884373f4d6c8f24742ceabe74946\""

    public init(engine: TransferEngine, partials: PartialStore, retry: RetryPolicy = RetryPolicy(), logger: Logger) {
        self.engine = engine
        self.partials = partials
        self.retry = retry
        self.logger = logger
    }

    /// Downloads `url`; `expectedSize`, when known, must match the file's final size.
    ///
    /// Each attempt continues from the bytes already held (`Range` plus `If-Range`); a server that
    /// answers 200 instead replaces them. When the server's ETag is an MD5 (Imgur's CDN), the
    /// file's MD5 must match it.
    public func fetch(
        _ url: String, id: TransferID = .next(), expectedSize: Int64? = nil,
        progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(DownloadError) -> FetchedFile {
        let path = partials.partPath(for: url)
        var attempt = 0
        var waited = Duration.zero
        var received: Int64 = 0
        while true {
            attempt += 1
            let resume = partials.resumePoint(for: url)
            let request = TransferRequest(
                url: url,
                destination: .file(path: path, offset: resume?.offset ?? 0),
                ifRange: resume?.validator,
                expectedEntityLength: resume?.record.totalLength)
            var retryAfter: Duration?
            let failure: DownloadError.Reason
            do {
                let response = try await engine.perform(
                    request, id: id, progress: progress, onBodyStart: { recordValidators(of: $0, url: url) })
                received += response.bytesReceived
                if Self.isRemovedPlaceholder(response) {
                    partials.remove(url)
                    throw DownloadError(url: url, reason: .removed)
                }
                switch response.status {
                case 200..<300:
                    if Self.isWebPage(response) {
                        partials.remove(url)
                        throw DownloadError(url: url, reason: .htmlPage)
                    }
                    return try verified(url, response, expectedSize: expectedSize, received: received)
                case 416:
                    // Nothing left to send: the partial is whole if its length is the resource's.
                    if let total = response.entityLength, total == partials.length(for: url) {
                        return try verified(url, response, expectedSize: expectedSize, received: received)
                    }
                    partials.remove(url)
                    failure = .httpStatus(416)
                case 408, 429, 500...599:
                    retryAfter = response.headers["Retry-After"].flatMap(Self.parseRetryAfter)
                    failure = .httpStatus(response.status)
                default:
                    throw DownloadError(url: url, reason: .httpStatus(response.status))
                }
            } catch let error as TransferError {
                received += error.response?.bytesReceived ?? 0
                if error.reason == .cancelled { throw DownloadError(url: url, reason: .transfer(.cancelled)) }
                if let response = error.response, Self.isRemovedPlaceholder(response) {
                    partials.remove(url)
                    throw DownloadError(url: url, reason: .removed)
                }
                if case .rangeMismatch = error.reason {
                    // The server's idea of the resource changed under us: start it over.
                    partials.remove(url)
                } else if !error.isRetryable {
                    throw DownloadError(url: url, reason: .transfer(error.reason))
                }
                failure = .transfer(error.reason)
            } catch let error as DownloadError {
                guard error.reason.isVerificationFailure else { throw error }
                // The bytes are wrong however they were put together: fetch them all again.
                partials.remove(url)
                failure = error.reason
            } catch {
                throw DownloadError(url: url, reason: .storage("\(error)"))
            }
            guard attempt < retry.maxAttempts else { throw DownloadError(url: url, reason: failure) }
            let delay = retry.delay(afterAttempt: attempt, retryAfter: retryAfter)
            guard waited + delay <= retry.maxTotalWait else { throw DownloadError(url: url, reason: failure) }
            logger.debug("retrying \(url) in \(delay) after: \(DownloadError(url: url, reason: failure))")
            do {
                try await Task.sleep(for: delay)
            } catch {
                throw DownloadError(url: url, reason: .transfer(.cancelled))
            }
            waited += delay
        }
    }

    /// Saves the validators of a response about to write the partial, before its first byte.
    private func recordValidators(of response: TransferResponse, url: String) {
        let record = PartialRecord(
            url: url, etag: response.etag, lastModified: response.lastModified, totalLength: response.entityLength)
        do {
            try partials.save(record)
        } catch {
            logger.warning("cannot record validators for \(url): \(error)")
        }
    }

    /// Checks size and checksum of a complete partial.
    private func verified(
        _ url: String, _ response: TransferResponse, expectedSize: Int64?, received: Int64
    ) throws(DownloadError) -> FetchedFile {
        let path = partials.partPath(for: url)
        let length = partials.length(for: url)
        if let expected = expectedSize ?? response.entityLength, expected != length {
            throw DownloadError(url: url, reason: .sizeMismatch(expected: expected, actual: length))
        }
        if let etag = response.etag ?? partials.record(for: url)?.etag, let md5 = Digest.md5(inETag: etag) {
            // The engine hashed the bytes as it wrote them; a 416 (nothing sent) means reading the file.
            let actual = response.bodyMD5 ?? Digest.md5Hex(ofFile: path) ?? "unreadable"
            guard actual == md5 else {
                throw DownloadError(url: url, reason: .checksumMismatch(expected: md5, actual: actual))
            }
        }
        logger.debug("fetched \(url) (\(length) bytes, \(received) over the network)")
        return FetchedFile(url: url, path: path, length: length, bytesReceived: received)
    }

    /// An HTML page where media or an archive was expected: a login wall, an error page served
    /// with 200, or a feed "enclosure" that links a landing page.
    static func isWebPage(_ response: TransferResponse) -> Bool {
        response.headers["Content-Type"]?.lowercased().hasPrefix("text/html") == true
    }

    static func isRemovedPlaceholder(_ response: TransferResponse) -> Bool {
        response.etag == removedPlaceholderETag
            || URLComponents(string: response.finalURL)?.path.hasSuffix("/removed.png") == true
    }

    /// `Retry-After` in seconds (the HTTP-date form is rare enough to ignore).
    static func parseRetryAfter(_ value: String) -> Duration? {
        guard let seconds = Int(value.trimmingCharacters(in: .whitespaces)), seconds >= 0 else { return nil }
        return .seconds(min(seconds, 24 * 3600))
    }
}
