import FoundationEssentials
import Logging

/// A downloaded file, complete and verified, waiting in the partial store to be committed.
///
/// Its fields live in one immutable box: the file passes by copy from the download through the
/// scheduler's mail and answers to its job (some ten copies a file), and a copy of the fields
/// themselves retained and released each of their strings every time.
@dynamicMemberLookup
package struct FetchedFile: Sendable, Equatable {
    struct Fields: Sendable, Equatable {
        let url: String
        let path: String
        let length: Int64
        /// Bytes this fetch received over the network (less than `length` after a resume).
        let bytesReceived: Int64
        /// The server's `Last-Modified` for the file, as sent.
        let lastModified: String?
        /// The server's ETag for the file, as sent.
        let etag: String?
        /// The file's MD5, when it was computed (an MD5 ETag checked, or hashing asked for).
        let md5: String?
        /// The server answered 304 to a conditional request: the copy held is current, and nothing
        /// was downloaded (`path` and `length` mean nothing).
        let isNotModified: Bool
        /// The partial's name in the store's folder, when the fetch knows it: the commit need not
        /// hash the URL again to find it.
        let partName: String?
    }

    private final class Box: Sendable {
        let fields: Fields

        init(_ fields: Fields) {
            self.fields = fields
        }
    }

    private let box: Box

    package init(
        url: String, path: String, length: Int64, bytesReceived: Int64, lastModified: String? = nil,
        etag: String? = nil, md5: String? = nil, isNotModified: Bool = false, partName: String? = nil
    ) {
        box = Box(Fields(
            url: url, path: path, length: length, bytesReceived: bytesReceived, lastModified: lastModified,
            etag: etag, md5: md5, isNotModified: isNotModified, partName: partName))
    }

    subscript<Value>(dynamicMember field: KeyPath<Fields, Value>) -> Value {
        box.fields[keyPath: field]
    }

    package static func == (lhs: FetchedFile, rhs: FetchedFile) -> Bool {
        lhs.box === rhs.box || lhs.box.fields == rhs.box.fields
    }

    /// The answer to a conditional request that the held copy is current.
    static func notModified(_ url: String, etag: String?, lastModified: String?) -> FetchedFile {
        FetchedFile(url: url, path: "", length: 0, bytesReceived: 0, lastModified: lastModified, etag: etag, isNotModified: true)
    }
}

extension FetchedFile: CustomReflectable {
    /// The fields, not the box: what a failed expectation or a log shows.
    package var customMirror: Mirror { Mirror(reflecting: box.fields) }
}

/// Fetches one URL into the partial store, resuming what earlier attempts left, retrying what may
/// pass, and checking that what arrived is whole before handing it on.
struct Downloader: Sendable {
    let engine: TransferEngine
    let partials: PartialStore
    let retry: RetryPolicy
    let logger: Logger
    /// What each answer says about its host; nil keeps no such record.
    let health: HostHealth?
    /// Recognises a host's "this file was removed" stand-in (Imgur's removed.png), if the host has one.
    let isRemovedPlaceholder: (@Sendable (TransferResponse) -> Bool)?
    /// The most bytes a file may have unless the caller states its size, whatever the server
    /// claims: a hostile feed or CDN must not be able to fill the disk.
    let maxFileSize: Int64
    /// In a mirror workers share: whether the partial of a URL is still this worker's to touch
    /// by its name, asked before each attempt and when its transfer ends; it waits while this
    /// worker cannot know (stopped past its lease and let go). Nil: always.
    let mayTouchPartial: (@Sendable (String) async -> Bool)?

    /// The default ``maxFileSize``: larger than any docset or video a feed lists.
    static let defaultMaxFileSize: Int64 = 16 << 30

    init(
        engine: TransferEngine, partials: PartialStore, retry: RetryPolicy = RetryPolicy(), health: HostHealth? = nil,
        isRemovedPlaceholder: (@Sendable (TransferResponse) -> Bool)? = nil, maxFileSize: Int64 = defaultMaxFileSize,
        mayTouchPartial: (@Sendable (String) async -> Bool)? = nil, logger: Logger
    ) {
        self.maxFileSize = maxFileSize
        self.mayTouchPartial = mayTouchPartial
        self.engine = engine
        self.partials = partials
        self.retry = retry
        self.health = health
        self.isRemovedPlaceholder = isRemovedPlaceholder
        self.logger = logger
    }

    /// Downloads `url`; `expectedSize`, when known, must match the file's final size, and no
    /// more bytes than that, nor than ``maxFileSize`` (an API may state a size it should not),
    /// are ever written.
    ///
    /// A file is handed on only when its length is proven: it matches a size stated by the
    /// caller, by a Content-Range total or a Content-Length, or the response's framing proved
    /// the body whole (see ``TransferResponse/isDelimited``). Otherwise its bytes stay a partial
    /// and the fetch fails with ``DownloadError/Reason/lengthUnproven(held:)``.
    ///
    /// Each attempt continues from the bytes already held (`Range` plus `If-Range`); a server that
    /// answers 200 instead replaces them. When the server's ETag is an MD5 (Imgur's CDN), the
    /// file's MD5 must match it. A host that ``HostHealth`` has given up fails at once with
    /// ``DownloadError/Reason/hostUnavailable(_:)``, as does one that throttles past the policy.
    /// `receiving` hears true when the file's body starts arriving, false when an attempt failed
    /// and the next one waits.
    ///
    /// With `held`, the request is conditional on the server's file not being that copy: a 304
    /// returns ``FetchedFile/notModified(_:etag:lastModified:)`` at once, and a new file comes
    /// with its MD5 (to tell a new version from the same bytes re-tagged).
    func fetch(
        _ url: String, id: TransferID = .next(), expectedSize: ExpectedSize? = nil, held: HeldVersion? = nil,
        progress: (@Sendable (TransferProgress) -> Void)? = nil, receiving: (@Sendable (Bool) -> Void)? = nil
    ) async throws(DownloadError) -> FetchedFile {
        if let exact = expectedSize?.exact, exact > maxFileSize {
            // Refused before asking: a server that states no length would send the cap's worth first.
            throw DownloadError(url: url, reason: .transfer(.fileTooLarge(limit: maxFileSize)))
        }
        var received: Int64 = 0
        return try await retry.run(
            giveUp: { failure, reason in gaveUp(failure, reason) },
            onRetry: { failure, delay in
                receiving?(false)
                logger.debug("retrying \(url) in \(DurationText.spoken(delay)) after: \(failure)")
            }
        ) { _ throws(DownloadError) in
            if let unavailable = hostUnavailable(url) { throw unavailable }
            return try await attempt(
                url, id: id, expectedSize: expectedSize, held: held, progress: progress, receiving: receiving,
                received: &received)
        }
    }

    /// One request: the file, a failure worth another try, or a failure that ends it.
    private func attempt(
        _ url: String, id: TransferID, expectedSize: ExpectedSize?, held: HeldVersion?, progress: (@Sendable (TransferProgress) -> Void)?,
        receiving: (@Sendable (Bool) -> Void)?, received: inout Int64
    ) async throws(DownloadError) -> RetryPolicy.Step<FetchedFile, DownloadError> {
        try await checkPartialIsOurs(url)
        let location: FileLocation
        do throws(DigestError) {
            location = try partials.location(for: url)
        } catch {
            throw DownloadError(url: url, reason: .transfer(.digest(error.description)))
        }
        let resume = partials.resumePoint(for: url, named: location.name)
        if let resume, resume.offset > maxFileSize, expectedSize?.exact == nil {
            // Held from a run with a larger --max-file-size: past this run's cap whatever the
            // server answers (its 416 would pass the bytes held off as the whole file). They stay
            // for a run that takes the file.
            throw DownloadError(url: url, reason: .transfer(.fileTooLarge(limit: maxFileSize)))
        }
        let offset = resume?.offset ?? 0
        var request = TransferRequest(
            url: url,
            headers: held?.requestHeaders ?? [],
            destination: .file(location, offset: offset),
            ifRange: resume?.validator,
            expectedEntityLength: resume?.record.totalLength,
            maxLength: expectedSize?.exact ?? maxFileSize)
        request.expectedBodyLength = expectedSize?.shown.map { $0 > offset ? $0 - offset : 0 }
        request.hashesBody = held != nil
        // The closures hold what they use, not the downloader: a copy of it retains each of its
        // references, twice an attempt.
        let (partials, logger, health) = (partials, logger, health)
        request.beforeFirstPartialWrite = { head in Self.recordValidators(of: head, url: url, in: partials, logger: logger) }
        let response: TransferResponse
        do {
            response = try await engine.perform(request, id: id, progress: progress, onBodyStart: { head in
                // The host answers: a body that later stalls says nothing against the host itself.
                if !RetryPolicy.isThrottling(status: head.status) { health?.recordAnswer(url: url) }
                if (200..<300).contains(head.status) { receiving?(true) }
                // A whole new file where bytes of another version were held: their record goes
                // now, before any of the new bytes, even those that reach the disk whole at once.
                if resume != nil, head.status == 200 { Self.recordValidators(of: head, url: url, in: partials, logger: logger) }
            })
        } catch let error as TransferError {
            received += error.response?.bytesReceived ?? 0
            // What follows a failed transfer may drop the partial.
            if error.reason != .cancelled { try await checkPartialIsOurs(url) }
            return try failedTransfer(url, error)
        } catch {
            throw DownloadError(url: url, reason: .storage("\(error)"))
        }
        received += response.bytesReceived
        try await checkPartialIsOurs(url)
        if RetryPolicy.isThrottling(status: response.status) {
            health?.recordThrottle(url: url, status: response.status)
        } else {
            health?.recordAnswer(url: url)
        }
        if isRemovedPlaceholder?(response) == true {
            partials.remove(url)
            throw DownloadError(url: url, reason: .removed)
        }
        switch response.status {
        case 304 where held != nil:
            // The copy held is the server's file: any bytes kept for it are of another version.
            partials.remove(url)
            return .success(.notModified(url, etag: response.etag, lastModified: response.lastModified))
        case 200, 206:
            if Self.isWebPage(response) {
                partials.remove(url)
                throw DownloadError(url: url, reason: .htmlPage)
            }
            return try verifiedOrRetry(url, at: location, response, expectedSize: expectedSize, received: received)
        case 416:
            // Nothing left to send: the partial is whole if its length is the resource's, and
            // the resource is still the version its bytes are of. A server that honours Range but
            // not If-Range answers so for a new version as long as what is held, as it would
            // send a 206 of one: the same checks as a 206's (see `CurlTransfer.decideBody`).
            if let total = response.entityLength, total == partials.length(for: url),
               resume?.record.totalLength.map({ $0 == total }) ?? true,
               resume.flatMap(\.validator).map({ CurlTransfer.validator($0, matches: response.headers) }) ?? true {
                return try verifiedOrRetry(url, at: location, response, expectedSize: expectedSize, received: received)
            }
            partials.remove(url)
            return .retry(DownloadError(url: url, reason: .httpStatus(416)), retryAfter: nil)
        case let status where RetryPolicy.isRetryable(status: status):
            return .retry(
                DownloadError(url: url, reason: .httpStatus(status)),
                retryAfter: RetryPolicy.retryAfter(response.headers["Retry-After"]))
        case 404, 410:
            // Gone: bytes held for it would never be resumed, only kept.
            partials.remove(url)
            throw DownloadError(url: url, reason: .httpStatus(response.status))
        default:
            throw DownloadError(url: url, reason: .httpStatus(response.status))
        }
    }

    /// Throws a cancel unless `url`'s partial is still this worker's to touch by its name (see
    /// ``mayTouchPartial``).
    private func checkPartialIsOurs(_ url: String) async throws(DownloadError) {
        guard let mayTouchPartial else { return }
        guard await mayTouchPartial(url) else { throw DownloadError(url: url, reason: .transfer(.cancelled)) }
    }

    /// A transfer that ended without a whole response: which failures another attempt may mend.
    private func failedTransfer(_ url: String, _ error: TransferError) throws(DownloadError) -> RetryPolicy.Step<FetchedFile, DownloadError> {
        if error.reason == .cancelled { throw DownloadError(url: url, reason: .transfer(.cancelled)) }
        if let response = error.response {
            health?.recordAnswer(url: url)
            if isRemovedPlaceholder?(response) == true {
                partials.remove(url)
                throw DownloadError(url: url, reason: .removed)
            }
        } else if let unanswered = error.unanswered, let health {
            health.recordUnanswered(url: url, unanswered, message: error.reasonText)
            if let unavailable = hostUnavailable(url) { throw unavailable }
            // Worth another try whatever its code (a certificate failure too): the host's verdict,
            // not one file's line of errors, is what a host that cannot be reached should produce.
            return .retry(DownloadError(url: url, reason: .transfer(error.reason)), retryAfter: nil)
        }
        switch error.reason {
        case .rangeMismatch:
            // The server's idea of the resource changed under us: start it over.
            partials.remove(url)
            return .retry(DownloadError(url: url, reason: .transfer(error.reason)), retryAfter: nil)
        case .fileTooLarge:
            // Bytes past the size the file may have: whatever it is, it is not that file.
            partials.remove(url)
        default:
            break
        }
        if !error.isRetryable {
            throw DownloadError(url: url, reason: .transfer(error.reason))
        }
        return .retry(DownloadError(url: url, reason: .transfer(error.reason)), retryAfter: nil)
    }

    /// The verified file, or a retry from scratch when the bytes are wrong however they were put
    /// together.
    private func verifiedOrRetry(
        _ url: String, at location: FileLocation, _ response: TransferResponse, expectedSize: ExpectedSize?, received: Int64
    ) throws(DownloadError) -> RetryPolicy.Step<FetchedFile, DownloadError> {
        do throws(DownloadError) {
            let file = try verified(url, at: location, response, expectedSize: expectedSize, received: received)
            // Arrived in ranges (resumed in this run or from an earlier one): the archive holds
            // the 206s it took, and now the whole, so that a replay serves it whole.
            if let archive = engine.configuration.archive, response.bodyOffset > 0 || response.status == 416,
               let fd = try? location.folder().openFile(location.name, .read) {
                // A 416's type is its error page's, not the file's.
                archive.appendResource(
                    url: url, file: fd, length: file.length, contentType: response.status == 416 ? nil : response.headers["Content-Type"])
            }
            return .success(file)
        } catch {
            guard error.reason.isVerificationFailure else { throw error }
            partials.remove(url)
            return .retry(error, retryAfter: nil)
        }
    }

    /// The error that ends a fetch the policy gave up on. A host that throttles past the policy
    /// (its 429s or 503s outlast every attempt with nothing served meanwhile) is given up for the
    /// run: the file is left for a later run, not failed. One file that keeps failing while its
    /// host serves others simply fails.
    private func gaveUp(_ failure: DownloadError, _ reason: RetryPolicy.GiveUp) -> DownloadError {
        if reason == .cancelled { return DownloadError(url: failure.url, reason: .transfer(.cancelled)) }
        if let health, case .httpStatus(let status) = failure.reason, RetryPolicy.isThrottling(status: status),
           health.giveUpThrottled(url: failure.url, status: status), let unavailable = hostUnavailable(failure.url) {
            return unavailable
        }
        return failure
    }

    /// The error for a file whose host this run has given up, if it has.
    private func hostUnavailable(_ url: String) -> DownloadError? {
        health?.verdict(forURL: url).map { DownloadError(url: url, reason: .hostUnavailable($0.description)) }
    }

    /// Saves the validators of a response about to write the partial, before its first byte (a
    /// body written whole at once needs none: see ``TransferRequest/beforeFirstPartialWrite``).
    private static func recordValidators(of response: TransferResponse, url: String, in partials: PartialStore, logger: Logger) {
        var record = PartialRecord(
            url: url, etag: response.etag, lastModified: response.lastModified, totalLength: response.entityLength)
        // A 206 that names no version answered the If-Range of the bytes held: they are still
        // those bytes, and keep the validators that let the next attempt resume them.
        if response.status == 206, record.etag == nil, record.lastModified == nil, let held = partials.record(for: url) {
            (record.etag, record.lastModified) = (held.etag, held.lastModified)
        }
        do {
            try partials.save(record)
        } catch {
            logger.warning("cannot record validators for \(url): \(error)")
        }
    }

    /// Checks size and checksum of a complete partial.
    private func verified(
        _ url: String, at location: FileLocation, _ response: TransferResponse, expectedSize: ExpectedSize?, received: Int64
    ) throws(DownloadError) -> FetchedFile {
        let path = partials.folder.path(of: location.name)
        let length = response.fileLength
        // What a resumed answer (a 206, or a 416) does not say, the record of the attempt that
        // began the file may; a 200 is a whole file of its own, and one that says it all needs
        // no look at the record.
        let saysItAll = response.entityLength != nil && response.etag != nil && response.lastModified != nil
        let record = response.status == 200 || saysItAll ? nil : partials.record(for: url)
        if let expected = expectedSize?.exact ?? response.entityLength ?? record?.totalLength {
            guard expected == length else {
                throw DownloadError(url: url, reason: .sizeMismatch(expected: expected, actual: length))
            }
        } else if let declared = expectedSize?.declared {
            // A size a feed declared is the last resort: a body no length delimits must have it.
            guard declared == length else {
                partials.remove(url)
                throw DownloadError(url: url, reason: .declaredSizeMismatch(declared: declared, actual: length))
            }
        } else if !(response.status == 200 && response.isDelimited) {
            // Nobody stated the size and nothing proved the end: a cut connection looks the same.
            throw DownloadError(url: url, reason: .lengthUnproven(held: length))
        }
        var md5 = response.bodyMD5
        if let etag = response.etag ?? record?.etag, let stated = Digest.md5(inETag: etag) {
            // The engine hashed the bytes as it wrote them; a 416 (nothing sent) means reading the file.
            let actual: String
            do throws(DigestError) {
                if let hashed = response.bodyMD5 { actual = hashed } else { actual = try partials.md5(for: url) ?? "unreadable" }
            } catch {
                throw DownloadError(url: url, reason: .transfer(.digest(error.description)))
            }
            guard actual == stated else {
                throw DownloadError(url: url, reason: .checksumMismatch(expected: stated, actual: actual))
            }
            md5 = actual
        }
        logger.debug(
            "fetched \(url) (\(length) bytes, \(received) over the network)",
            metadata: ["url": "\(url)", "bytes": "\(length)", "received": "\(received)"])
        return FetchedFile(
            url: url, path: path, length: length, bytesReceived: received,
            lastModified: response.lastModified ?? record?.lastModified, etag: response.etag ?? record?.etag, md5: md5,
            partName: location.name)
    }

    /// An HTML page where media or an archive was expected: a login wall, an error page served
    /// with 200, or a feed "enclosure" that links a landing page.
    static func isWebPage(_ response: TransferResponse) -> Bool {
        response.headers["Content-Type"]?.lowercased().hasPrefix("text/html") == true
    }
}
