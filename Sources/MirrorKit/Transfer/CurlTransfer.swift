import CCurl
import FoundationEssentials

/// One transfer's libcurl easy handle and the state its callbacks build up.
///
/// Lives on the engine thread only: libcurl calls its callbacks from `curl_multi_perform` there, and
/// the engine creates, drives and frees it there.
final class CurlTransfer {
    let id: TransferID
    let request: TransferRequest
    let easy: UnsafeMutableRawPointer
    let continuation: CheckedContinuation<TransferResponse, any Error>
    private let progress: (@Sendable (TransferProgress) -> Void)?
    private let onBodyStart: (@Sendable (TransferResponse) -> Void)?
    private var requestHeaders: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    private var headers = HTTPHeaders()
    /// Whether the next header line begins a head: the first one, and each after a blank line.
    private var isStatusLineNext = true
    private var isBodyDecided = false
    private var isBodyAccepted = false
    private var sink: FileSink?
    private var memory: [UInt8] = []
    /// The request's inspector while it is undecided about a 2xx body; nil once it has decided.
    private var inspector: (any BodyInspector)?
    private var bodyOffset: Int64 = 0
    private var bytesReceived: Int64 = 0
    private var expectedTotal: Int64?
    private var reportedAt: Int64 = 0
    /// A failure found inside a callback; reported instead of curl's generic write error.
    private var failure: TransferError.Reason?
    /// Paused by its caller (``TransferEngine/pause(_:)``).
    var isPauseRequested = false
    /// Paused because the bandwidth budget ran dry; the engine loop unpauses it.
    var isThrottled = false
    /// libcurl holds it paused (its write callback said so): whoever lifts the last reason for
    /// the pause must let it go on, whatever the connection turned out to be.
    var isCurlPaused = false

    /// A pause asked for that applies: not on an HTTP/2 stream (see ``isMultiplexed``).
    var isHeld: Bool { isPauseRequested && !isMultiplexed }
    /// Told, once, that a pause asked for is not applied (an HTTP/2 stream).
    var onHoldRefused: ((TransferID) -> Void)?
    /// Told, at its first body bytes, that it is an HTTP/2 stream.
    var onMultiplexed: ((TransferID) -> Void)?
    private var holdRefusalReported = false

    /// On an HTTP/2 connection shared with other transfers. libcurl 7.88 has a run of bugs in
    /// pausing such streams (curl#10751, #10988, #10971), and changing a running stream's weight
    /// stalled it here, so a pause leaves such a stream alone: it goes on sharing the connection.
    var isMultiplexed: Bool {
        var version = 0
        mirror_curl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        return version == mirror_curl_http_version_2_0
    }
    private let bandwidth: BandwidthBudget?
    /// What this transfer exchanged, for the run's WARC archive.
    private let capture: ExchangeCapture?

    init(
        id: TransferID,
        request: TransferRequest,
        configuration: TransferEngine.Configuration,
        bandwidth: BandwidthBudget?,
        progress: (@Sendable (TransferProgress) -> Void)?,
        onBodyStart: (@Sendable (TransferResponse) -> Void)?,
        continuation: CheckedContinuation<TransferResponse, any Error>
    ) throws(TransferError) {
        guard let easy = curl_easy_init() else {
            throw TransferError(url: request.url, reason: .transport(code: 27, message: "curl_easy_init failed"))
        }
        self.id = id
        self.request = request
        self.easy = easy
        self.bandwidth = bandwidth
        self.progress = progress
        self.onBodyStart = onBodyStart
        self.continuation = continuation
        inspector = request.inspector
        capture = configuration.archive.map { ExchangeCapture(archive: $0, easy: easy, credentials: configuration.credentials) }
        errorBuffer[0] = 0
        configure(configuration)
    }

    /// libcurl's receive buffer for `request`. libcurl before 8.7 gives each transfer one, held
    /// from its start to its end (paused transfers too): at 128 KiB each, thumbnails of a few KiB
    /// held megabytes. A file's is as large as its body is expected to be, within libcurl's
    /// default (16 KiB, also for a body of unknown length) and 128 KiB, where a large file's
    /// writes stop getting cheaper. An API page or feed (in memory, one or two at a time) gets
    /// 128 KiB.
    static func receiveBufferSize(for request: TransferRequest) -> Int {
        guard case .file = request.destination else { return 128 << 10 }
        guard let length = request.expectedBodyLength else { return 16 << 10 }
        return Int(min(max(length, 16 << 10), 128 << 10))
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(requestHeaders)
        errorBuffer.deallocate()
    }

    private func configure(_ configuration: TransferEngine.Configuration) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        setLong(CURLOPT_NOSIGNAL, 1)
        setString(CURLOPT_URL, request.url)
        setString(CURLOPT_PROTOCOLS_STR, "http,https")
        setString(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        setLong(CURLOPT_FOLLOWLOCATION, 1)
        setLong(CURLOPT_MAXREDIRS, Int(configuration.maxRedirects))
        setLong(CURLOPT_SSL_VERIFYPEER, 1)
        setLong(CURLOPT_SSL_VERIFYHOST, 2)
        // HTTP/2 where TLS offers it (Imgur's CDN does), many transfers multiplexed on one
        // connection: over TLS a new transfer waits for a connection it could share rather than
        // open one. Never over plain HTTP, which stays HTTP/1.1: there the wait lasted until the
        // transfer ahead had ended, one transfer per host at a time.
        setLong(CURLOPT_HTTP_VERSION, Int(mirror_curl_http_version_2tls))
        if request.url.utf8.starts(with: "https:".utf8) { setLong(CURLOPT_PIPEWAIT, 1) }
        if let certificates = configuration.certificateAuthorities { setString(CURLOPT_CAINFO, certificates) }
        setString(CURLOPT_USERAGENT, configuration.userAgent)
        setLong(CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout.milliseconds))
        setLong(CURLOPT_LOW_SPEED_LIMIT, configuration.lowSpeedLimit)
        setLong(CURLOPT_LOW_SPEED_TIME, configuration.lowSpeedSeconds)
        setLong(CURLOPT_BUFFERSIZE, Self.receiveBufferSize(for: request))
        mirror_curl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)

        var headerLines = request.headers.map { "\($0.name): \($0.value)" }
        switch request.destination {
        case .memory:
            // Let libcurl negotiate and undo compression: API bodies are JSON and compress well.
            // Not when archiving: a WARC keeps the bytes as sent, and libcurl would hand over
            // decoded ones.
            if capture == nil { setString(CURLOPT_ACCEPT_ENCODING, "") }
        case .file(_, let offset):
            // The file as it is: compressed bytes under a file's name would be a corrupt file.
            headerLines.append("Accept-Encoding: identity")
            if offset > 0 {
                setString(CURLOPT_RANGE, "\(offset)-")
                if let validator = request.ifRange { headerLines.append("If-Range: \(validator)") }
            }
        }
        // Basic authentication with what the store holds for this origin, unless the request says
        // who it is itself (the API's Client-ID). libcurl sends it to this host only, not where
        // a redirect leads.
        if !request.headers.contains(where: { $0.name.lowercased() == "authorization" }),
           let credentials = request.credentials ?? configuration.credentials.credentials(for: request.url) {
            setString(CURLOPT_USERNAME, credentials.user)
            setString(CURLOPT_PASSWORD, credentials.password)
        }
        for line in headerLines {
            requestHeaders = curl_slist_append(requestHeaders, line)
        }
        if let requestHeaders { mirror_curl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, requestHeaders) }

        mirror_curl_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
            return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count))
        }
        mirror_curl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        mirror_curl_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
            return transfer.receiveHeader(UnsafeRawBufferPointer(start: data, count: size * count))
        }
        mirror_curl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        if capture != nil {
            // The request heads as sent reach mirror only through the debug callback.
            setLong(CURLOPT_VERBOSE, 1)
            setLong(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
            mirror_curl_easy_setopt_debug_callback(easy) { _, type, data, size, context in
                guard type == CURLINFO_HEADER_OUT, let data, let context else { return 0 }
                Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue().sentRequestHead(UnsafeRawBufferPointer(start: data, count: size))
                return 0
            }
            mirror_curl_easy_setopt_pointer(easy, CURLOPT_DEBUGDATA, context)
        }
    }

    private func sentRequestHead(_ bytes: UnsafeRawBufferPointer) {
        var effective: UnsafeMutablePointer<CChar>?
        mirror_curl_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &effective)
        capture?.requestSent(bytes, url: effective.map { String(cString: $0) } ?? request.url)
    }

    private func setLong(_ option: CURLoption, _ value: Int) {
        mirror_curl_easy_setopt_long(easy, option, value)
    }

    private func setString(_ option: CURLoption, _ value: String) {
        mirror_curl_easy_setopt_string(easy, option, value)
    }

    // MARK: - Callbacks

    private func receiveHeader(_ bytes: UnsafeRawBufferPointer) -> Int {
        capture?.responseHeader(bytes)
        if isStatusLineNext, bytes.starts(with: "HTTP/".utf8) {
            // A new response begins (after a redirect or a 100 Continue): only the last one counts.
            // Only where a head begins: "HTTP/x: y" further down is a field (libcurl 7.88 passes
            // it on as one), and taken for a new response it would drop the fields before it.
            headers = HTTPHeaders()
            isStatusLineNext = false
        } else if let first = bytes.first, first == 0x20 || first == 0x09 {
            // An obsolete folded line (RFC 9112 §5.2) continues the field before it: a coding
            // folded onto it must not hide behind the "identity" the field began with.
            headers.continueLastField(bytes)
            // One that reads as the body's encoding or length is kept as that field as well: a
            // reader that does not unfold (a proxy) takes it so, and the checks of what the body
            // is must not see less than it. (Not Transfer-Encoding: libcurl, which frames the
            // body, reads no folded line, and a chunked framing it never applied proves no end.)
            if let field = HTTPHeaders.parseField(bytes), Self.fieldsSayingWhatTheBodyIs.contains(where: field.name.caseInsensitiveEquals) {
                headers.append(name: field.name, value: field.value)
            }
        } else if let field = HTTPHeaders.parseField(bytes) {
            headers.append(name: field.name, value: field.value)
        } else if bytes.allSatisfy({ $0 == 0x0D || $0 == 0x0A }) {
            // The blank line that ends a head: a status line may follow (a 1xx's final answer).
            isStatusLineNext = true
        }
        return bytes.count
    }

    private func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        // The pause is applied here, at the next bytes, once the connection is known: a pause
        // asked for before the response began would otherwise hold what becomes an HTTP/2 stream.
        if isHeld {
            isCurlPaused = true
            return Int(CURL_WRITEFUNC_PAUSE)
        }
        if isPauseRequested, !holdRefusalReported {
            // An HTTP/2 stream: its bytes go on coming, and the caller must not count its place as free.
            holdRefusalReported = true
            onHoldRefused?(id)
        }
        if !isBodyDecided { decideBody() }
        guard failure == nil else { return Int(mirror_curl_writefunc_error) }
        guard isBodyAccepted else {
            capture?.received(bytes)
            return bytes.count
        }
        if let bandwidth, !bandwidth.take(bytes.count) {
            isThrottled = true
            isCurlPaused = true
            return Int(CURL_WRITEFUNC_PAUSE)
        }
        if inspector != nil {
            switch inspector!.inspect(bytes) {
            case .undecided: break
            case .accepted: inspector = nil
            case .refused(let reason):
                failure = .refused(reason)
                return Int(mirror_curl_writefunc_error)
            }
        }
        do throws(TransferError.Reason) {
            switch request.destination {
            case .memory(let limit):
                guard memory.count + bytes.count <= limit else { throw .bodyTooLarge(limit: limit) }
                memory.append(contentsOf: bytes)
            case .file:
                if let limit = request.maxLength, bodyOffset + bytesReceived + Int64(bytes.count) > limit {
                    throw .fileTooLarge(limit: limit)
                }
                try sink?.append(bytes)
            }
        } catch {
            failure = error
            return Int(mirror_curl_writefunc_error)
        }
        // An API answer or a feed is taken whole from `memory` at the end.
        if case .file = request.destination, let capture {
            capture.receivedIntoFile(bytes)
            // What the sink has written out, a large body's stream may archive now.
            if let sink { capture.bodyWrittenOut(sink.flushedLength - bodyOffset, file: archivedFile) }
        }
        bytesReceived += Int64(bytes.count)
        reportProgressIfDue()
        return bytes.count
    }

    /// Decides, once the final response's head is in, whether its body is ours to keep and where
    /// it starts. An error status never reaches a file; a 206 must start where we asked.
    private func decideBody() {
        isBodyDecided = true
        if isMultiplexed { onMultiplexed?(id) }
        let status = responseStatus
        // An error page is not the body the inspector judges.
        if !(200..<300).contains(status) { inspector = nil }
        switch request.destination {
        case .memory:
            isBodyAccepted = true
        case .file(let location, let offset):
            // Only a 200 or a 206 carries the file: a 204 or 203 must not cost the bytes held.
            guard status == 200 || status == 206 else { return }
            // Every field counts: a second Content-Encoding line must not hide behind an "identity".
            if let encoding = Self.refusedEncoding(headers.combined("Content-Encoding"), url: request.url) {
                failure = .contentEncoded("Content-Encoding: \(encoding)")
                return
            }
            // A length libcurl reads otherwise than the server meant proves no end (a cut body of
            // a value past 64 bits would pass for whole), and RFC 9110 §8.6 makes it an error.
            if let value = headers.invalidContentLength {
                failure = .invalidLength("Content-Length: \(value.prefix(40))")
                return
            }
            var start: Int64 = 0
            if status == 206 {
                let header = headers["Content-Range"] ?? ""
                guard let range = ContentRange(header: header), range.range?.lowerBound == offset,
                      request.expectedEntityLength == nil || range.total == request.expectedEntityLength
                else {
                    failure = .rangeMismatch(requested: offset, received: header)
                    return
                }
                // A server that honours Range but not If-Range would splice a changed file onto ours.
                if let validator = request.ifRange, !Self.validator(validator, matches: headers) {
                    failure = .rangeMismatch(requested: offset, received: "a 206 for another version (\(validator) no longer matches)")
                    return
                }
                start = offset
                expectedTotal = range.total
            } else if let length = headers["Content-Length"].flatMap(HTTPHeaders.contentLength) {
                expectedTotal = length
            }
            if let limit = request.maxLength, let total = expectedTotal, total > limit {
                failure = .fileTooLarge(limit: limit)
                return
            }
            do throws(TransferError.Reason) {
                let sink = try FileSink(
                    location: location, offset: start,
                    capacity: FileSink.capacity(forRemaining: expectedTotal.map { $0 - start }))
                if request.hashesBody || headers["ETag"].flatMap(Digest.md5(inETag:)) != nil { try sink.hashContents() }
                if let record = request.beforeFirstPartialWrite {
                    // The sink is this transfer's and flushes only from its methods: it never
                    // outlives it.
                    sink.beforeFirstPartialWrite = { [unowned self] in
                        if let head = makeResponse() { record(head) }
                    }
                }
                self.sink = sink
            } catch {
                failure = error
                return
            }
            bodyOffset = start
            isBodyAccepted = true
            if let onBodyStart, let response = makeResponse() { onBodyStart(response) }
            progress?(TransferProgress(completed: start, total: expectedTotal))
        }
    }

    private func reportProgressIfDue() {
        guard let progress, bytesReceived - reportedAt >= 256 << 10 else { return }
        reportedAt = bytesReceived
        progress(TransferProgress(completed: bodyOffset + bytesReceived, total: expectedTotal))
    }

    private var responseStatus: Int {
        var status = 0
        mirror_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        return status
    }

    // MARK: - Completion

    /// Ends the transfer with libcurl's result: writes out what is buffered and resumes the caller.
    func finish(code: CURLcode) {
        if code == CURLE_OK && !isBodyDecided { decideBody() }
        var md5: String?
        if let sink {
            do throws(TransferError.Reason) {
                // The last bytes of a body that arrived whole; a failed one may be resumed.
                try sink.flush(isLast: code == CURLE_OK && failure == nil && isBodyWhole)
                md5 = try sink.finishDigest()
            } catch {
                failure = failure ?? error
            }
        }
        capture?.finish(
            truncated: code == CURLE_OK && failure == nil ? nil : "disconnect", file: archivedFile, memory: archivedMemory,
            writtenToFile: writtenToFile)
        var response = makeResponse()
        if code == CURLE_OK && failure == nil { response?.bodyMD5 = md5 }
        if let failure {
            continuation.resume(throwing: TransferError(url: request.url, reason: failure, response: response))
        } else if code != CURLE_OK {
            continuation.resume(throwing: TransferError(
                url: request.url, reason: .transport(code: Int32(code.rawValue), message: errorMessage(code)),
                response: response))
        } else if let response, let shortfall = bodyShortfall {
            continuation.resume(throwing: TransferError(
                url: request.url, reason: .transport(code: 18, message: shortfall), response: response))
        } else if let response {
            if isBodyAccepted { progress?(TransferProgress(completed: bodyOffset + bytesReceived, total: expectedTotal)) }
            continuation.resume(returning: response)
        } else {
            continuation.resume(throwing: TransferError(
                url: request.url, reason: .transport(code: 52, message: "no response")))
        }
    }

    /// Ends the transfer because its caller cancelled it, keeping what was written.
    func cancel() {
        if let sink { try? sink.flush(isLast: false) }
        capture?.finish(truncated: "disconnect", file: archivedFile, memory: archivedMemory, writtenToFile: writtenToFile)
        continuation.resume(throwing: TransferError(url: request.url, reason: .cancelled, response: makeResponse()))
    }

    /// How much of this response's body its file holds (nil: it went to no file).
    private var writtenToFile: Int64? {
        sink.map { $0.flushedLength - bodyOffset }
    }

    /// The file this transfer's body went to, for the archive: a descriptor of its own, and
    /// where the body starts.
    private func archivedFile() -> (fd: Int32, offset: Int64)? {
        sink.map { ($0.duplicateDescriptor(), bodyOffset) }
    }

    /// The body kept in memory (an API answer, a feed), for the archive; nil for a file's.
    private var archivedMemory: [UInt8]? {
        if case .memory = request.destination { memory } else { nil }
    }

    private func makeResponse() -> TransferResponse? {
        let status = responseStatus
        guard status > 0 else { return nil }
        var effective: UnsafeMutablePointer<CChar>?
        mirror_curl_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &effective)
        return TransferResponse(
            status: status,
            headers: headers,
            // A redirect may have named a userinfo: it is never carried on into names or links.
            finalURL: URLUserinfo.split(effective.map { String(cString: $0) } ?? request.url).url,
            body: memory,
            bodyOffset: bodyOffset,
            bytesReceived: bytesReceived,
            fileLength: sink?.flushedLength ?? existingFileLength,
            bodyMD5: nil,
            isDelimited: isDelimited)
    }

    private var existingFileLength: Int64 {
        guard case .file(let location, _) = request.destination,
              let info = try? location.folder().status(of: location.name)
        else { return 0 }
        return Int64(info.st_size)
    }

    /// See ``TransferResponse/isDelimited``.
    private var isDelimited: Bool {
        var version = 0
        mirror_curl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        if version >= mirror_curl_http_version_2_0 { return true }
        if headers["Content-Length"].flatMap(HTTPHeaders.contentLength) != nil { return true }
        return headers["Transfer-Encoding"]?.lowercased().contains("chunked") == true
    }

    /// Whether the body received is provably all the response had: its framing proves its end,
    /// and it is as long as its Content-Length says (see ``bodyShortfall``).
    private var isBodyWhole: Bool {
        isBodyAccepted && isDelimited && bodyShortfall == nil
    }

    /// libcurl already fails a body cut short of its Content-Length; this double-checks the count
    /// for identity-encoded bodies, the only ones whose length the header states.
    private var bodyShortfall: String? {
        guard isBodyAccepted, headers["Content-Encoding"] == nil,
              let declared = headers["Content-Length"].flatMap(HTTPHeaders.contentLength),
              declared != bytesReceived
        else { return nil }
        return "body ended after \(bytesReceived) of \(declared) bytes"
    }

    private func errorMessage(_ code: CURLcode) -> String {
        let detail = String(cString: errorBuffer)
        return detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
    }
}
