import CMirrorSystem
import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// The mirror directory on a file system like NFS: no `renameat2(RENAME_NOREPLACE)` (EINVAL), no
/// extended attributes and no `O_TMPFILE` (EOPNOTSUPP). bindfs with `--xattr-none` answers all
/// three as NFS does, over a temporary directory: files land whole under their names, a partial's
/// record goes to its `.json`, a killed run is resumed by Range, and nothing is named twice.
@Suite("A mirror on an NFS-like file system", .timeLimit(.minutes(2)))
struct SharedFileSystemTests {
    static let bindfs = ["/usr/bin/bindfs", "/bin/bindfs"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let available = bindfs != nil && access("/dev/fuse", R_OK | W_OK) == 0 && Mount.isPossible

    /// `body` gets a folder on a bindfs mount without attributes, unmounted after.
    private func withNFSLikeFolder<T>(_ body: (URL) async throws -> T) async throws -> T {
        try await TestSupport.withTemporaryDirectory { dir in
            let backing = dir.appendingPathComponent("backing")
            let mount = dir.appendingPathComponent("mount")
            try FileManager.default.createDirectory(at: backing, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: mount, withIntermediateDirectories: true)
            let status = try ChildProcess(executable: Self.bindfs!, arguments: ["--xattr-none", backing.path, mount.path]).runBlocking()
            try #require(status == 0, "bindfs could not mount")
            defer {
                // A process still in the mount (a failed test's) must not keep it: lazily then.
                if (try? ChildProcess(executable: "/bin/umount", arguments: [mount.path]).runBlocking()) != 0 {
                    _ = try? ChildProcess(executable: "/bin/umount", arguments: ["-l", mount.path]).runBlocking()
                }
            }
            // What the mount answers is what this test is about: NFS's answers, checked.
            let probe = mount.appendingPathComponent("probe")
            try Data("x".utf8).write(to: probe)
            let fd = open(probe.path, O_RDWR)
            try #require(fd >= 0)
            defer { close(fd) }
            try #require(!Directory.setAttribute("user.mirror.probe", Array("1".utf8), onFile: fd), "the mount keeps attributes")
            let renamed = mirror_renameat_noreplace(AT_FDCWD, probe.path, AT_FDCWD, mount.appendingPathComponent("probe2").path)
            try #require(renamed == -1 && errno == EINVAL, "the mount renames with RENAME_NOREPLACE")
            return try await body(mount)
        }
    }

    private func arguments(_ tag: String, out: String, idFile: String, server: FixtureServer) -> [String] {
        [tag, "--out", out, "--client-id-file", idFile, "--api-base", server.baseURL, "--media-base", server.baseURL, "--quiet"]
    }

    private func names(under folder: String) -> [String] {
        (FileManager.default.enumerator(atPath: folder)?.allObjects as? [String] ?? []).sorted()
    }

    @Test(.enabled(if: available, "needs bindfs, /dev/fuse and root allowed to mount (scripts/setup installs bindfs)"))
    func aTagLandsWholeAndAnUnchangedRerunFetchesNothing() async throws {
        try await withNFSLikeFolder { mount in
            try await TestSupport.withServer { server in
                server.addGeneratedTag("shared", pages: 2, perPage: 10, albumEvery: 4, imagesPerAlbum: 2, imageSize: 20_000)
                try await MirrorProcess.withClientID { _, idFile in
                    let out = mount.appendingPathComponent("out").path
                    let first = try await MirrorProcess.run(arguments("shared", out: out, idFile: idFile, server: server))
                    #expect(first.status == 0, "\(first.stderr)")
                    let ids = server.generatedImageIDs("shared")
                    let full = try FileManager.default.contentsOfDirectory(atPath: out + "/full").sorted()
                    #expect(full == ids.map { "\($0).jpg" }.sorted())
                    for id in ids {
                        #expect(TestSupport.digest(ofFile: "\(out)/full/\(id).jpg") == TestSupport.digest(server.content(of: "/\(id).jpg")!))
                    }
                    #expect(!names(under: out).contains { $0.contains("(1)") })
                    #expect(names(under: out + "/.mirror/partials").isEmpty)
                    let media = ids.map { server.requestCount(path: "/\($0).jpg") }.reduce(0, +)
                    let again = try await MirrorProcess.run(arguments("shared", out: out, idFile: idFile, server: server))
                    #expect(again.status == 0, "\(again.stderr)")
                    #expect(ids.map { server.requestCount(path: "/\($0).jpg") }.reduce(0, +) == media, "an unchanged rerun fetched media")
                }
            }
        }
    }

    @Test(.enabled(if: available, "needs bindfs, /dev/fuse and root allowed to mount (scripts/setup installs bindfs)"))
    func aRunKilledMidFileIsResumedFromTheRecordBesideThePartial() async throws {
        try await withNFSLikeFolder { mount in
            try await TestSupport.withServer { server in
                let size = 6 << 20
                server.addGeneratedTag("large", pages: 1, perPage: 1, albumEvery: 0, imageSize: size)
                let id = try #require(server.generatedImageIDs("large").first)
                server.inject(.throttle(bytesPerSecond: 2 << 20), path: "/\(id).jpg")
                try await MirrorProcess.withClientID { dir, idFile in
                    let out = mount.appendingPathComponent("out").path
                    let partials = out + "/.mirror/partials"
                    let first = try MirrorProcess.start(
                        arguments("large", out: out, idFile: idFile, server: server), log: dir.appendingPathComponent("first.log"))
                    defer { if first.isRunning { first.signal(SIGKILL) } }
                    try await eventually("a third of the file is in its partial", within: .seconds(60)) {
                        names(under: partials).contains { name in
                            name.hasSuffix(".part")
                                && ((try? FileManager.default.attributesOfItem(atPath: "\(partials)/\(name)"))?[.size] as? Int ?? 0) >= size / 3
                        }
                    }
                    first.signal(SIGKILL)
                    #expect(await first.wait() == .signalled(SIGKILL))
                    // Without attributes, the partial's record is the .json beside it.
                    #expect(names(under: partials).contains { $0.hasSuffix(".json") }, "\(names(under: partials))")

                    let second = try await MirrorProcess.run(arguments("large", out: out, idFile: idFile, server: server))
                    #expect(second.status == 0, "\(second.stderr)")
                    #expect(TestSupport.digest(ofFile: "\(out)/full/\(id).jpg") == TestSupport.digest(server.content(of: "/\(id).jpg")!))
                    #expect(Double(server.bodyBytesSent(path: "/\(id).jpg")) <= Double(size) * 1.05, "the file was fetched again, not resumed")
                    #expect(names(under: partials).isEmpty, "\(names(under: partials))")
                    #expect(!names(under: out).contains { $0.contains("(1)") })
                }
            }
        }
    }
}
