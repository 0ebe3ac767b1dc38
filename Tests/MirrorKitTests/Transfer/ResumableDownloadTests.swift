import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

@Suite("Resumable downloads: partials, retries, verification", .timeLimit(.minutes(2)))
struct ResumableDownloadTests {
    let engine = TransferEngine()
    let quickRetry = RetryPolicy(maxAttempts: 6, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50))

    private func withDownloader<T>(
        retry: RetryPolicy? = nil, engine: TransferEngine? = nil, health: HostHealth? = nil,
        isRemovedPlaceholder: (@Sendable (TransferResponse) -> Bool)? = nil,
        _ body: (FixtureServer, Downloader, PartialStore) async throws -> T
    ) async throws -> T {
        try await TestSupport.withDownloader(
            engine: engine ?? self.engine, retry: retry ?? quickRetry, health: health,
            isRemovedPlaceholder: isRemovedPlaceholder, body)
    }

    @Test func aDropAtHalfOfA64MiBFileCompletesSendingAtMost1_02TimesItsSize() async throws {
        try await withDownloader { server, downloader, _ in
            let size = 64 << 20
            server.addMedia(path: "/half.bin", size: size)
            server.inject(.dropAfter(bytes: size / 2), path: "/half.bin")
            let url = server.baseURL + "/half.bin"
            let file = try await downloader.fetch(url)
            #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(server.content(of: "/half.bin")))
            #expect(server.requestCount(path: "/half.bin") == 2)
            let sent = server.bodyBytesSent(path: "/half.bin")
            #expect(Double(sent) <= 1.02 * Double(size), "sent \(sent) bytes for \(size)")
            let resumed = try #require(server.requests.last)
            #expect(resumed.header("Range") == "bytes=\(size / 2)-")
            #expect(resumed.header("If-Range") == server.etag(of: "/half.bin"))
        }
    }

    @Test func aServerThatIgnoresRangeYieldsTheCorrectFile() async throws {
        try await withDownloader { server, downloader, _ in
            server.addMedia(path: "/norange.bin", size: 3 << 20)
            server.inject(.dropAfter(bytes: 1 << 20), path: "/norange.bin")
            server.inject(.ignoreRange, path: "/norange.bin")
            let file = try await downloader.fetch(server.baseURL + "/norange.bin")
            #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(server.content(of: "/norange.bin")))
            #expect(server.requests.last?.header("Range") == "bytes=\(1 << 20)-")
        }
    }

    @Test func contentChangedBetweenAttemptsYieldsTheNewFileNeverASplice() async throws {
        try await withDownloader(retry: RetryPolicy(maxAttempts: 1)) { server, downloader, partials in
            server.addMedia(path: "/changes.bin", size: 2 << 20)
            server.inject(.dropAfter(bytes: 1 << 20), path: "/changes.bin")
            let url = server.baseURL + "/changes.bin"
            await #expect(throws: DownloadError.self) { try await downloader.fetch(url) }
            #expect(partials.length(for: url) == 1 << 20)
            server.changeContent(path: "/changes.bin")
            let file = try await downloader.fetch(url)
            #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(server.content(of: "/changes.bin")))
            #expect(server.requests.last?.header("If-Range") != server.etag(of: "/changes.bin"))
        }
    }

    /// A partial an older build left, its record in JSON in the attribute, is resumed where it
    /// stopped: an upgrade loses no bytes.
    @Test func aPartialWithTheJSONRecordOfAnOlderBuildIsResumed() async throws {
        try await withDownloader(retry: RetryPolicy(maxAttempts: 1)) { server, downloader, partials in
            server.addMedia(path: "/older.bin", size: 300_000)
            let url = server.baseURL + "/older.bin"
            let content = try #require(server.content(of: "/older.bin"))
            try TestSupport.write(Array(content.prefix(100_000)), to: partials.partPath(for: url))
            let json = try JSONEncoder().encode(PartialRecord(url: url, etag: server.etag(of: "/older.bin"), totalLength: 300_000))
            let fd = try partials.folder.openFile(try partials.partName(for: url), .write(create: false))
            let attached = Directory.setAttribute(PartialStore.attribute, Array(json), onFile: fd)
            close(fd)
            try #require(attached, "this file system keeps no user attributes")
            let file = try await downloader.fetch(url)
            #expect(server.requests.last?.header("Range") == "bytes=100000-")
            // The server counts a chunk after writing it: on a loaded machine, after the client has it.
            try await eventually("the server has counted what it sent") { server.bodyBytesSent(path: "/older.bin") >= 200_000 }
            #expect(server.bodyBytesSent(path: "/older.bin") == 200_000)
            #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(content))
        }
    }

    /// A resume answered with a whole other file, short enough to reach the disk in one write:
    /// nothing of the old version's record may describe it (its validators, its size), on disk or
    /// in what the fetch returns.
    @Test func aWholeNewAnswerToAResumeKeepsNothingOfTheOldRecord() async throws {
        try await withDownloader(retry: RetryPolicy(maxAttempts: 1)) { server, downloader, partials in
            server.addMedia(path: "/swapped.bin", size: 300_000)
            server.inject(.dropAfter(bytes: 100_000), path: "/swapped.bin")
            let url = server.baseURL + "/swapped.bin"
            await #expect(throws: DownloadError.self) { try await downloader.fetch(url) }
            let old = try #require(partials.record(for: url))
            #expect(old.etag != nil && old.totalLength == 300_000)
            let body = "a new, short file"
            server.inject(.respondWithLines(status: 200, lines: ["Content-Type: application/octet-stream"], body: body), path: "/swapped.bin")
            let file = try await downloader.fetch(url)
            #expect(server.requests.last?.header("Range") == "bytes=100000-")
            #expect(TestSupport.bytes(at: file.path) == Array(body.utf8))
            #expect(file.etag == nil && file.lastModified == nil, "the old version's validators are not this file's")
            let now = partials.record(for: url)
            #expect(now?.etag == nil && now?.totalLength == Int64(body.utf8.count), "on disk: \(String(describing: now))")
        }
    }

    @Test func burstsOf5xxAnd429AreSurvived() async throws {
        try await withDownloader { server, downloader, _ in
            server.addMedia(path: "/busy.bin", size: 100_000)
            server.inject(.respond(status: 503), path: "/busy.bin", times: 2)
            server.inject(.respond(status: 429), path: "/busy.bin", times: 2)
            server.inject(.respond(status: 500), path: "/busy.bin")
            let file = try await downloader.fetch(server.baseURL + "/busy.bin")
            #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(server.content(of: "/busy.bin")))
            #expect(server.requestCount(path: "/busy.bin") == 6)
        }
    }

    @Test func retryAfterIsHonoured() async throws {
        try await withDownloader { server, downloader, _ in
            server.addMedia(path: "/later.bin", size: 1000)
            server.inject(.respond(status: 429, headers: ["Retry-After": "1"]), path: "/later.bin")
            let start = ContinuousClock.now
            _ = try await downloader.fetch(server.baseURL + "/later.bin")
            #expect(ContinuousClock.now - start >= .milliseconds(950))
        }
    }

    @Test func retriesAreBoundedAndNameTheLastFailure() async throws {
        try await withDownloader(retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(5))) { server, downloader, _ in
            server.addMedia(path: "/down.bin", size: 1000)
            server.inject(.respond(status: 502), path: "/down.bin", times: 10)
            let error = await #expect(throws: DownloadError.self) {
                try await downloader.fetch(server.baseURL + "/down.bin")
            }
            #expect(error?.reason == .httpStatus(502))
            #expect(server.requestCount(path: "/down.bin") == 3)
        }
    }

    @Test func otherClientErrorsFailFast() async throws {
        try await withDownloader { server, downloader, _ in
            let error = await #expect(throws: DownloadError.self) {
                try await downloader.fetch(server.baseURL + "/nothing-here.jpg")
            }
            #expect(error?.reason == .httpStatus(404))
            #expect(error?.description == "\(server.baseURL)/nothing-here.jpg: HTTP 404")
            #expect(server.requestCount(path: "/nothing-here.jpg") == 1)
        }
    }

    @Test func aStalledTransferIsDetectedAndResumed() async throws {
        let impatient = TransferEngine(configuration: .init(lowSpeedLimit: 10_000, lowSpeedSeconds: 5))
        try await withDownloader(engine: impatient) { server, downloader, _ in
            server.addMedia(path: "/stall.bin", size: 1 << 20)
            // Every download from the start stalls after 256 KiB; a resume is served whole. On a
            // loaded machine an attempt may be given up before its first bytes and keep nothing,
            // so no count of stalls is assumed: the file can only be had by resuming.
            let stallAt = 256 << 10
            server.inject(
                .stall(afterBytes: stallAt, seconds: 30), path: "/stall.bin",
                times: quickRetry.maxAttempts, sparingRangedRequests: true)
            let file = try await downloader.fetch(server.baseURL + "/stall.bin")
            #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(server.content(of: "/stall.bin")))
            let ranges = server.requests.compactMap { $0.header("Range") }
            let resumedFrom = ranges.compactMap { Int($0.dropFirst("bytes=".count).dropLast()) }
            #expect(resumedFrom.first.map { $0 > 0 && $0 <= stallAt } == true, "\(ranges)")
            // Nothing was fetched twice but the stalled prefixes (and, on a loaded machine, a
            // resume given up and resumed again).
            let fromTheStart = server.requests.count { $0.path == "/stall.bin" && $0.header("Range") == nil }
            let resumedBytes = resumedFrom.reduce(0) { $0 + (1 << 20) - $1 }
            #expect(server.bodyBytesSent(path: "/stall.bin") <= fromTheStart * stallAt + resumedBytes)
        }
    }

    @Test func removedMediaIsReportedAsRemovedNotSavedNotRetried() async throws {
        try await withDownloader(isRemovedPlaceholder: ImgurRemovedMedia.isPlaceholder) { server, downloader, partials in
            let url = server.baseURL + "/Rm0vEd1.jpg"
            let error = await #expect(throws: DownloadError.self) { try await downloader.fetch(url) }
            #expect(error?.reason == .removed)
            #expect(server.requestCount(path: "/Rm0vEd1.jpg") == 1)
            #expect(partials.length(for: url) == 0)
        }
    }

    @Test func aBodyWhoseMD5DoesNotMatchItsETagIsFetchedAgain() async throws {
        try await withDownloader { server, downloader, _ in
            server.addMedia(path: "/md5.bin", size: 3)
            server.inject(
                .respond(status: 200, headers: ["ETag": "\"00000000000000000000000000000000\""], body: "abc"),
                path: "/md5.bin")
            let file = try await downloader.fetch(server.baseURL + "/md5.bin")
            #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(server.content(of: "/md5.bin")))
            #expect(server.requestCount(path: "/md5.bin") == 2)
        }
    }

    @Test func aSizeOtherThanTheAPIsFails() async throws {
        try await withDownloader(retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5))) { server, downloader, partials in
            server.addMedia(path: "/short.bin", size: 500)
            let url = server.baseURL + "/short.bin"
            let error = await #expect(throws: DownloadError.self) { try await downloader.fetch(url, expectedSize: 501) }
            #expect(error?.reason == .sizeMismatch(expected: 501, actual: 500))
            #expect(partials.length(for: url) == 0)
        }
    }

    /// A length declared far below the bytes held (a feed's stale or absurd `length`) only sizes
    /// a buffer: the partial resumes, and the difference must not overflow.
    @Test func aDeclaredLengthFarBelowThePartialHeldResumes() async throws {
        try await withDownloader { server, downloader, partials in
            server.addMedia(path: "/stale.bin", size: 4000)
            let url = server.baseURL + "/stale.bin"
            let content = try #require(server.content(of: "/stale.bin"))
            try TestSupport.write(content.prefix(2500), to: partials.partPath(for: url))
            try partials.save(PartialRecord(url: url, etag: server.etag(of: "/stale.bin"), totalLength: 4000))
            let file = try await downloader.fetch(url, expectedSize: ExpectedSize(declared: .min + 1))
            #expect(file.bytesReceived == 1500)
            #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(content))
        }
    }

    @Test func aCompletePartialIsAcceptedOnA416() async throws {
        try await withDownloader { server, downloader, partials in
            server.addMedia(path: "/whole.bin", size: 4000)
            let url = server.baseURL + "/whole.bin"
            try TestSupport.write(try #require(server.content(of: "/whole.bin")), to: partials.partPath(for: url))
            try partials.save(PartialRecord(url: url, etag: server.etag(of: "/whole.bin"), totalLength: 4000))
            let file = try await downloader.fetch(url)
            #expect(file.bytesReceived == 0)
            #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(server.content(of: "/whole.bin")))
        }
    }

    @Test func aResourceThatChangedSizeStartsOverFromZero() async throws {
        try await withDownloader { server, downloader, partials in
            server.addMedia(path: "/grown.bin", size: 8000)
            let url = server.baseURL + "/grown.bin"
            let content = try #require(server.content(of: "/grown.bin"))
            try TestSupport.write(content.prefix(1000), to: partials.partPath(for: url))
            // Same validator, other size: the server would splice a different file onto ours.
            try partials.save(PartialRecord(url: url, etag: server.etag(of: "/grown.bin"), totalLength: 6000))
            let file = try await downloader.fetch(url)
            #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(content))
            #expect(server.requests.last?.header("Range") == nil)
        }
    }

    /// A server that honours Range but not If-Range, whose file changed to one exactly as long as
    /// the bytes held, answers the resume with a 416: the bytes held are not that file.
    @Test(arguments: [
        // The record knew the old version's size; the 416 states another and no ETag.
        (recordedTotal: Int64?(6000), answer: ["Content-Range: bytes */1000"]),
        // The record knew only the old version's ETag; the 416 carries the new one's.
        (recordedTotal: nil, answer: ["Content-Range: bytes */1000", #"ETag: "version-b""#]),
    ])
    func a416ForAnotherVersionAsLongAsThePartialStartsOver(recordedTotal: Int64?, answer: [String]) async throws {
        try await withDownloader { server, downloader, partials in
            server.addMedia(path: "/replaced.bin", size: 5000)
            let url = server.baseURL + "/replaced.bin"
            try TestSupport.write([UInt8](repeating: 0x41, count: 1000), to: partials.partPath(for: url))
            try partials.save(PartialRecord(url: url, etag: #""version-a""#, totalLength: recordedTotal))
            server.inject(.respondWithLines(status: 416, lines: answer), path: "/replaced.bin")
            let file = try await downloader.fetch(url)
            #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(server.content(of: "/replaced.bin")))
            #expect(server.requests.last?.header("Range") == nil)
        }
    }

    /// A 206 without validators, cut short: the partial keeps the validators of the bytes it
    /// holds, so the next attempt resumes it rather than starting from zero.
    @Test func aCut206WithoutValidatorsKeepsThePartialsOwn() async throws {
        let head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 1000-4999/5000\r\nContent-Length: 4000\r\nContent-Type: application/octet-stream\r\n\r\n"
        // 1,000 bytes of the 4,000 stated, then the connection closes.
        let server = try RawHTTPServer(answer: Array(head.utf8) + [UInt8](repeating: 0x42, count: 1000))
        defer { server.close() }
        let engine = TransferEngine()
        try await TestSupport.withTemporaryDirectory { dir in
            let partials = try PartialStore(directory: dir.appendingPathComponent("partials"))
            let downloader = Downloader(engine: engine, partials: partials, retry: RetryPolicy(maxAttempts: 1), logger: TestSupport.logger)
            let url = server.baseURL + "/episode.mp3"
            try TestSupport.write([UInt8](repeating: 0x41, count: 1000), to: partials.partPath(for: url))
            try partials.save(PartialRecord(url: url, etag: #""v1""#, lastModified: nil, totalLength: 5000))
            await #expect(throws: DownloadError.self) { try await downloader.fetch(url) }
            #expect(partials.length(for: url) == 2000)
            #expect(partials.record(for: url)?.etag == #""v1""#)
            #expect(partials.resumePoint(for: url, named: try partials.partName(for: url))?.offset == 2000)
        }
    }

    @Test func aPartialWithoutValidatorsIsNotTrusted() async throws {
        try await withDownloader { server, downloader, partials in
            server.addMedia(path: "/orphan.bin", size: 5000)
            let url = server.baseURL + "/orphan.bin"
            try TestSupport.write([UInt8](repeating: 1, count: 1000), to: partials.partPath(for: url))
            let file = try await downloader.fetch(url)
            #expect(TestSupport.digest(ofFile: file.path) == TestSupport.digest(server.content(of: "/orphan.bin")))
            #expect(server.requests.last?.header("Range") == nil)
        }
    }

    @Test func theIfRangeValidatorIsAStrongETagElseLastModifiedOnlyWithoutAnyETag() {
        #expect(PartialRecord(url: "u", etag: "\"abc\"", lastModified: "date").ifRangeValidator == "\"abc\"")
        // RFC 9110 §13.1.5: a weak ETag says the bytes may differ; no date may stand in for it.
        #expect(PartialRecord(url: "u", etag: "W/\"abc\"", lastModified: "date").ifRangeValidator == nil)
        #expect(PartialRecord(url: "u", etag: nil, lastModified: "date").ifRangeValidator == "date")
        #expect(PartialRecord(url: "u", etag: nil, lastModified: nil).ifRangeValidator == nil)
    }

    @Test func backoffGrowsIsJitteredAndHonoursRetryAfter() {
        let policy = RetryPolicy(baseDelay: .seconds(1), maxDelay: .seconds(8))
        for attempt in 1...6 {
            let delay = policy.delay(afterAttempt: attempt)
            let ceiling = min(Duration.seconds(1 << (attempt - 1)), .seconds(8))
            #expect(delay <= ceiling && delay >= ceiling / 2)
        }
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(30)) == .seconds(30))
    }
}
