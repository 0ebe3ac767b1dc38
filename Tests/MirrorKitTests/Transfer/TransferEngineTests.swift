import FixtureServer
import Foundation
import Synchronization
import Testing
@testable import MirrorKit

@Suite("Transfer engine against the fixture server", .timeLimit(.minutes(2)))
struct TransferEngineTests {
    let engine = TransferEngine()

    @Test func downloadsAFileByteForByte() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/big.bin", size: 5 << 20 + 17)
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("big.part").path
                let response = try await engine.perform(
                    TransferRequest(url: server.baseURL + "/big.bin", destination: .file(path: path, offset: 0)))
                #expect(response.status == 200)
                #expect(response.fileLength == 5 << 20 + 17)
                #expect(response.etag == server.etag(of: "/big.bin"))
                // The MD5 the engine kept while writing is the file's, and the one the ETag states.
                #expect(response.bodyMD5 == Digest.md5Hex(ofFile: path))
                #expect(response.bodyMD5 == response.etag.flatMap(Digest.md5(inETag:)))
                #expect(TestSupport.digest(ofFile: path) == TestSupport.digest(server.content(of: "/big.bin")))
            }
        }
    }

    @Test func sizesTheReceiveBufferByTheBodyExpected() {
        func size(_ length: Int64?, inMemory: Bool = false) -> Int {
            var request = TransferRequest(
                url: "http://127.0.0.1/x", destination: inMemory ? .memory(limit: 1 << 20) : .file(path: "/nonexistent/x", offset: 0))
            request.expectedBodyLength = length
            return CurlTransfer.receiveBufferSize(for: request)
        }
        #expect(size(nil) == 16 << 10)
        #expect(size(0) == 16 << 10)
        #expect(size(8 << 10) == 16 << 10)
        #expect(size(50_000) == 50_000)
        #expect(size(256 << 20) == 128 << 10)
        #expect(size(nil, inMemory: true) == 128 << 10)
    }

    /// The size expected only sizes the buffer: a body much larger (a stale feed length) arrives whole.
    @Test func aBodyLargerThanExpectedArrivesWhole() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/grown.bin", size: 3 << 20 + 5)
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("grown.part").path
                var request = TransferRequest(url: server.baseURL + "/grown.bin", destination: .file(path: path, offset: 0))
                request.expectedBodyLength = 1_000
                let response = try await engine.perform(request)
                #expect(response.status == 200)
                #expect(response.fileLength == 3 << 20 + 5)
                #expect(TestSupport.digest(ofFile: path) == TestSupport.digest(server.content(of: "/grown.bin")))
            }
        }
    }

    @Test func runsManyTransfersAtOnce() async throws {
        try await TestSupport.withServer { server in
            let paths = (0..<40).map { "/many-\($0).bin" }
            for (index, path) in paths.enumerated() { server.addMedia(path: path, size: 10_000 + index * 997) }
            try await TestSupport.withTemporaryDirectory { dir in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for path in paths {
                        group.addTask {
                            let file = dir.appendingPathComponent(String(path.dropFirst())).path
                            _ = try await engine.perform(
                                TransferRequest(url: server.baseURL + path, destination: .file(path: file, offset: 0)))
                        }
                    }
                    try await group.waitForAll()
                }
                for path in paths {
                    #expect(TestSupport.digest(ofFile: dir.appendingPathComponent(String(path.dropFirst())).path) == TestSupport.digest(server.content(of: path)))
                }
            }
        }
    }

    @Test func keepsAnErrorBodyInMemoryButNeverOnDisk() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/e.bin", size: 1000)
            server.inject(.respond(status: 503, body: "busy"), path: "/e.bin", times: 2)
            let inMemory = try await engine.perform(TransferRequest(url: server.baseURL + "/e.bin"))
            #expect(inMemory.status == 503)
            #expect(String(decoding: inMemory.body, as: UTF8.self) == "busy")
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("e.part").path
                let response = try await engine.perform(
                    TransferRequest(url: server.baseURL + "/e.bin", destination: .file(path: path, offset: 0)))
                #expect(response.status == 503)
                #expect(!FileManager.default.fileExists(atPath: path))
            }
        }
    }

    @Test func aDroppedConnectionKeepsTheReceivedPrefixAndResumesWithRange() async throws {
        try await TestSupport.withServer { server in
            let size = 8 << 20
            server.addMedia(path: "/drop.bin", size: size)
            server.inject(.dropAfter(bytes: 3 << 20), path: "/drop.bin")
            let content = try #require(server.content(of: "/drop.bin"))
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("drop.part").path
                let url = server.baseURL + "/drop.bin"
                let error = try await #require(throws: TransferError.self) {
                    try await engine.perform(TransferRequest(url: url, destination: .file(path: path, offset: 0)))
                }
                #expect(error.isRetryable)
                let kept = try #require(error.response?.fileLength)
                #expect(kept == 3 << 20)
                #expect(TestSupport.digest(ofFile: path) == TestSupport.digest(Array(content.prefix(Int(kept)))))

                let resumed = try await engine.perform(TransferRequest(
                    url: url, destination: .file(path: path, offset: kept), ifRange: error.response?.etag))
                #expect(resumed.status == 206)
                #expect(resumed.bodyOffset == kept)
                // Hashed from byte 0: the prefix from disk, then the rest as it arrived.
                #expect(resumed.bodyMD5 == Digest.md5Hex(ofFile: path))
                #expect(resumed.entityLength == Int64(size))
                #expect(TestSupport.digest(ofFile: path) == TestSupport.digest(content))
                let lastRequest = try #require(server.requests.last)
                #expect(lastRequest.header("Range") == "bytes=\(kept)-")
                #expect(lastRequest.header("If-Range") == server.etag(of: "/drop.bin"))
            }
        }
    }

    @Test func aServerIgnoringRangeMakesTheFileStartOver() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/norange.bin", size: 300_000)
            server.inject(.ignoreRange, path: "/norange.bin")
            let content = try #require(server.content(of: "/norange.bin"))
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("n.part").path
                try TestSupport.write(content.prefix(100_000), to: path)
                let response = try await engine.perform(TransferRequest(
                    url: server.baseURL + "/norange.bin", destination: .file(path: path, offset: 100_000)))
                #expect(response.status == 200)
                #expect(response.bodyOffset == 0)
                #expect(TestSupport.digest(ofFile: path) == TestSupport.digest(content))
            }
        }
    }

    @Test func changedContentFailsIfRangeAndReplacesTheStalePrefix() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/changing.bin", size: 200_000)
            let old = try #require(server.content(of: "/changing.bin"))
            let oldETag = server.etag(of: "/changing.bin")
            server.changeContent(path: "/changing.bin")
            let new = try #require(server.content(of: "/changing.bin"))
            #expect(old != new)
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("c.part").path
                try TestSupport.write(old.prefix(50_000), to: path)
                let response = try await engine.perform(TransferRequest(
                    url: server.baseURL + "/changing.bin", destination: .file(path: path, offset: 50_000),
                    ifRange: oldETag))
                #expect(response.status == 200)
                #expect(TestSupport.digest(ofFile: path) == TestSupport.digest(new))
            }
        }
    }

    @Test func aRangeStartingElsewhereIsRefusedAndTheFileKept() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/r.bin", size: 100)
            server.inject(
                .respond(status: 206, headers: ["Content-Range": "bytes 0-9/100"], body: "0123456789"), path: "/r.bin")
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("r.part").path
                try TestSupport.write([UInt8](repeating: 7, count: 50), to: path)
                let error = try await #require(throws: TransferError.self) {
                    try await engine.perform(TransferRequest(
                        url: server.baseURL + "/r.bin", destination: .file(path: path, offset: 50)))
                }
                #expect(error.reason == .rangeMismatch(requested: 50, received: "bytes 0-9/100"))
                #expect(TestSupport.bytes(at: path) == [UInt8](repeating: 7, count: 50))
            }
        }
    }

    @Test func anUnsatisfiableRangeAnswers416AndLeavesTheFile() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/done.bin", size: 1000)
            let content = try #require(server.content(of: "/done.bin"))
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("d.part").path
                try TestSupport.write(content, to: path)
                let response = try await engine.perform(TransferRequest(
                    url: server.baseURL + "/done.bin", destination: .file(path: path, offset: 1000)))
                #expect(response.status == 416)
                #expect(response.entityLength == 1000)
                #expect(TestSupport.digest(ofFile: path) == TestSupport.digest(content))
            }
        }
    }

    @Test(arguments: ["ftp://127.0.0.1/file", "file:///etc/passwd", "gopher://127.0.0.1/"])
    func refusesARedirectToANonHTTPScheme(_ location: String) async throws {
        try await TestSupport.withServer { server in
            server.inject(.respond(status: 302, headers: ["Location": location]), path: "/hop")
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("hop.part").path
                let error = try await #require(throws: TransferError.self) {
                    try await engine.perform(TransferRequest(
                        url: server.baseURL + "/hop", destination: .file(path: path, offset: 0)))
                }
                guard case .transport(let code, _) = error.reason else {
                    Issue.record("expected a transport error, got \(error)")
                    return
                }
                #expect(code == 1)  // CURLE_UNSUPPORTED_PROTOCOL
                #expect(!error.isRetryable)
                #expect(!FileManager.default.fileExists(atPath: path))
            }
        }
    }

    @Test func followsAtMostFiveRedirects() async throws {
        try await TestSupport.withServer { server in
            server.inject(.respond(status: 302, headers: ["Location": "/loop"]), path: "/loop", times: 10)
            let error = try await #require(throws: TransferError.self) {
                try await engine.perform(TransferRequest(url: server.baseURL + "/loop"))
            }
            guard case .transport(let code, let message) = error.reason else {
                Issue.record("expected a transport error, got \(error)")
                return
            }
            #expect(code == 47)  // CURLE_TOO_MANY_REDIRECTS
            // curl's own words, naming the limit the engine set.
            #expect(message.contains("Maximum (5) redirects"), "\(message)")
            #expect(!error.isRetryable)
            #expect(server.requestCount(path: "/loop") == 6)
        }
    }

    @Test func detectsAStalledTransferAndKeepsItsPrefix() async throws {
        // Eight seconds, not one: on a loaded machine the answer alone can take seconds.
        let impatient = TransferEngine(configuration: .init(lowSpeedLimit: 10_000, lowSpeedSeconds: 8))
        try await TestSupport.withServer { server in
            server.addMedia(path: "/stall.bin", size: 2 << 20)
            server.inject(.stall(afterBytes: 256 << 10, seconds: 30), path: "/stall.bin")
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("s.part").path
                let error = try await #require(throws: TransferError.self) {
                    try await impatient.perform(TransferRequest(
                        url: server.baseURL + "/stall.bin", destination: .file(path: path, offset: 0)))
                }
                guard case .transport(let code, _) = error.reason else {
                    Issue.record("expected a timeout, got \(error)")
                    return
                }
                #expect(code == 28)
                #expect(error.isRetryable)
                // All 256 KiB before the stall, unless a loaded machine was slower than the limit
                // before it: then what arrived, and still only a prefix of the file.
                // (No answer at all, even, on a machine starved for as long as the limit.)
                let kept = error.response?.fileLength ?? 0
                #expect(kept <= 256 << 10)
                let content = try #require(server.content(of: "/stall.bin"))
                if kept > 0 {
                    #expect(TestSupport.digest(ofFile: path) == TestSupport.digest(Array(content.prefix(Int(kept)))))
                }
            }
        }
    }

    @Test func refusesABodyOverTheMemoryLimit() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/large.json", size: 100_000)
            let error = try await #require(throws: TransferError.self) {
                try await engine.perform(TransferRequest(
                    url: server.baseURL + "/large.json", destination: .memory(limit: 10_000)))
            }
            #expect(error.reason == .bodyTooLarge(limit: 10_000))
        }
    }

    @Test func cancellingTheCallerStopsTheTransferAndKeepsWhatArrived() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/slow.bin", size: 16 << 20)
            server.inject(.throttle(bytesPerSecond: 1 << 20), path: "/slow.bin")
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("slow.part").path
                let received = Atomic<Int64>(0)
                let task = Task {
                    try await engine.perform(
                        TransferRequest(url: server.baseURL + "/slow.bin", destination: .file(path: path, offset: 0)),
                        progress: { received.store($0.completed, ordering: .relaxed) })
                }
                // Wait for bytes received (held in the sink's buffer until the cancel writes them),
                // not for a time, nor for a whole buffer on disk: the throttled server sleeps between
                // chunks, and a loaded test run stretches each sleep.
                try await eventually("the first bytes arrive", within: .seconds(60)) {
                    received.load(ordering: .relaxed) > 0
                }
                task.cancel()
                let error = try await #require(throws: TransferError.self) { try await task.cancellableValue }
                #expect(error.reason == .cancelled)
                let kept = try #require(error.response?.fileLength)
                #expect(kept > 0 && kept < 16 << 20)
                let content = try #require(server.content(of: "/slow.bin"))
                #expect(TestSupport.digest(ofFile: path) == TestSupport.digest(Array(content.prefix(Int(kept)))))
            }
        }
    }

    @Test func anUnreachableServerIsARetryableTransportError() async throws {
        let error = try await #require(throws: TransferError.self) {
            try await engine.perform(TransferRequest(url: "http://127.0.0.1:9/nothing"))
        }
        guard case .transport(let code, let message) = error.reason else {
            Issue.record("expected a transport error, got \(error)")
            return
        }
        #expect(code == 7)  // CURLE_COULDNT_CONNECT
        // curl's detail, not its generic strerror text: it says where it failed to connect.
        #expect(message.contains("Failed to connect to 127.0.0.1 port 9"), "\(message)")
        #expect(error.isRetryable)
        #expect(error.unanswered == .notConnected)
    }

    @Test func sharesABandwidthLimitAcrossTransfers() async throws {
        let limited = TransferEngine(configuration: .init(maxBytesPerSecond: 512 << 10))
        try await TestSupport.withServer { server in
            server.addMedia(path: "/a.bin", size: 1 << 20)
            server.addMedia(path: "/b.bin", size: 1 << 20)
            let start = ContinuousClock.now
            async let first = limited.perform(TransferRequest(url: server.baseURL + "/a.bin", destination: .memory(limit: 4 << 20)))
            async let second = limited.perform(TransferRequest(url: server.baseURL + "/b.bin", destination: .memory(limit: 4 << 20)))
            let bodies = try await [first.body.count, second.body.count]
            #expect(bodies == [1 << 20, 1 << 20])
            // 2 MiB at 512 KiB/s in all takes 4 s less the bucket's first burst (64 KiB); unlimited,
            // loopback takes milliseconds.
            #expect(ContinuousClock.now - start >= .seconds(3))
        }
    }

    @Test func aPauseSentBeforeTheTransferStartsHoldsIt() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/held.bin", size: 1 << 20)
            let id = TransferID.next()
            engine.pause(id)
            let finished = CancellationFlag()
            let task = Task {
                defer { finished.set() }
                return try await engine.perform(
                    TransferRequest(url: server.baseURL + "/held.bin", destination: .memory(limit: 2 << 20)), id: id)
            }
            try await eventually("the request reaches the server", within: .seconds(30)) {
                server.requestCount(path: "/held.bin") == 1
            }
            try await Task.sleep(for: .milliseconds(300))
            #expect(!finished.isSet)
            engine.resume(id)
            #expect(try await task.cancellableValue.body.count == 1 << 20)
        }
    }

    @Test func a206ForAnotherVersionIsRefused() async throws {
        try await TestSupport.withServer { server in
            server.inject(
                .respond(status: 206, headers: ["Content-Range": "bytes 50-99/100", "ETag": "\"theirs\""],
                         body: String(repeating: "x", count: 50)),
                path: "/v.bin")
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("v.part").path
                try TestSupport.write([UInt8](repeating: 1, count: 50), to: path)
                let error = try await #require(throws: TransferError.self) {
                    try await engine.perform(TransferRequest(
                        url: server.baseURL + "/v.bin", destination: .file(path: path, offset: 50), ifRange: "\"ours\""))
                }
                guard case .rangeMismatch = error.reason else {
                    Issue.record("expected a range mismatch, got \(error)")
                    return
                }
                #expect(TestSupport.bytes(at: path) == [UInt8](repeating: 1, count: 50))
            }
        }
    }

    @Test func neverAppendsPastTheEndOfAShorterPartial() async throws {
        try await TestSupport.withServer { server in
            server.addMedia(path: "/short.bin", size: 100)
            try await TestSupport.withTemporaryDirectory { dir in
                let path = dir.appendingPathComponent("s.part").path
                try TestSupport.write([UInt8](repeating: 1, count: 10), to: path)
                let error = try await #require(throws: TransferError.self) {
                    try await engine.perform(TransferRequest(
                        url: server.baseURL + "/short.bin", destination: .file(path: path, offset: 50)))
                }
                #expect(error.reason == .rangeMismatch(requested: 50, received: "a local partial of only 10 bytes"))
                #expect(TestSupport.bytes(at: path)?.count == 10)
            }
        }
    }

    @Test func shuttingDownEndsRunningTransfersAndRefusesNewOnes() async throws {
        let engine = TransferEngine()
        try await TestSupport.withServer { server in
            server.addMedia(path: "/long.bin", size: 4 << 20)
            server.inject(.throttle(bytesPerSecond: 256 << 10), path: "/long.bin")
            let running = Task {
                try await engine.perform(TransferRequest(url: server.baseURL + "/long.bin", destination: .memory(limit: 8 << 20)))
            }
            try await eventually("the transfer runs", within: .seconds(30)) { server.bodyBytesSent(path: "/long.bin") > 0 }
            await engine.shutDown()
            let error = try await #require(throws: TransferError.self) { try await running.cancellableValue }
            #expect(error.reason == .cancelled)
            let late = try await #require(throws: TransferError.self) {
                try await engine.perform(TransferRequest(url: server.baseURL + "/long.bin"))
            }
            #expect(late.reason == .cancelled)
        }
    }
}
