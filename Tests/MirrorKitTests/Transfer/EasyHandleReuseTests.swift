import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// Transfers one after another on one engine share libcurl handles (``EasyHandles``): none may
/// carry an option of the one before it to the server.
@Suite("A reused transfer handle carries nothing of the transfer before", .timeLimit(.minutes(1)))
struct EasyHandleReuseTests {
    @Test func eachRequestSendsOnlyItsOwnHeaders() async throws {
        let engine = TransferEngine()
        try await TestSupport.withServer { server in
            server.addMedia(path: "/first.bin", size: 20_000)
            server.addMedia(path: "/second.bin", size: 20_000)
            server.addMedia(path: "/third.bin", size: 20_000)
            let first = try #require(server.content(of: "/first.bin"))
            try await TestSupport.withTemporaryDirectory { dir in
                // A resumed download with a login and a header of its own...
                let resumed = dir.appendingPathComponent("first.part").path
                try TestSupport.write(first.prefix(5_000), to: resumed)
                var ranged = TransferRequest(
                    url: server.baseURL + "/first.bin", headers: [("X-Only-First", "yes")],
                    destination: .file(path: resumed, offset: 5_000), ifRange: server.etag(of: "/first.bin"))
                ranged.credentials = URLCredentials(user: "someone", password: "secret")
                #expect(try await engine.perform(ranged).status == 206)
                #expect(TestSupport.digest(ofFile: resumed) == TestSupport.digest(first))

                // ...then a plain one into memory, which lets libcurl ask for compression...
                let plain = try await engine.perform(TransferRequest(url: server.baseURL + "/second.bin"))
                #expect(plain.status == 200)

                // ...then a fresh file, which must not.
                let fresh = dir.appendingPathComponent("third.part").path
                let whole = try await engine.perform(
                    TransferRequest(url: server.baseURL + "/third.bin", destination: .file(path: fresh, offset: 0)))
                #expect(whole.status == 200)
                #expect(TestSupport.digest(ofFile: fresh) == TestSupport.digest(server.content(of: "/third.bin")))
            }
            let sent = Dictionary(server.requests.map { ($0.path, $0) }, uniquingKeysWith: { $1 })
            let firstRequest = try #require(sent["/first.bin"])
            #expect(firstRequest.header("Range") == "bytes=5000-")
            #expect(firstRequest.header("Authorization")?.hasPrefix("Basic ") == true)
            #expect(firstRequest.header("X-Only-First") == "yes")
            for later in ["/second.bin", "/third.bin"] {
                let request = try #require(sent[later])
                #expect(request.header("Range") == nil, "\(later)")
                #expect(request.header("If-Range") == nil, "\(later)")
                #expect(request.header("Authorization") == nil, "\(later)")
                #expect(request.header("X-Only-First") == nil, "\(later)")
            }
            #expect(sent["/second.bin"]?.header("Accept-Encoding")?.contains("gzip") == true)
            #expect(sent["/third.bin"]?.header("Accept-Encoding") == "identity")
        }
        await engine.shutDown()
    }
}
