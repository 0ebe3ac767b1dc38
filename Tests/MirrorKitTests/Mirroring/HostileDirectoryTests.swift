import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// The output directory may sit on shared storage or in /tmp, where another user can plant
/// links, folders and files before a run: none of it is ever written through.
@Suite("Hostile directories: nothing written through a link or into another's folder", .timeLimit(.minutes(3)))
struct HostileDirectoryTests {
    let engine = TransferEngine()

    private func mirrorTag(_ server: FixtureServer, into dir: URL, mode: DownloadMode = .skipIfExists) async throws -> MirrorSummary {
        let client = ImgurClient(apiBase: server.baseURL, clientID: "fixture", engine: engine, logger: TestSupport.logger)
        let settings = TagRun.Settings(
            crawl: TagCrawler.Options(tag: "cats", maxPages: 1), urls: MediaURLBuilder(mediaBase: server.baseURL),
            mode: mode, retry: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(5)))
        return try await TagRun(
            directory: try MirrorDirectory(root: dir), client: client, engine: engine, settings: settings,
            logger: TestSupport.logger
        ).run()
    }

    private func victim(in dir: URL) throws -> String {
        let path = dir.appendingPathComponent("victim-authorized_keys").path
        try TestSupport.write(Array("ssh-ed25519 AAAA victim\n".utf8), to: path)
        return path
    }

    private func isUntouched(_ path: String) -> Bool {
        TestSupport.bytes(at: path) == Array("ssh-ed25519 AAAA victim\n".utf8)
    }

    /// Plants a link to a victim's file as `.mirror/<name>` and requires `open` to refuse it,
    /// naming the link, with the victim untouched.
    private func refusesALinkPlanted(as name: String, _ open: (MirrorDirectory) throws -> Void) async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let target = try victim(in: dir)
            let out = dir.appendingPathComponent("out")
            let directory = try MirrorDirectory(root: out)
            let planted = out.appendingPathComponent(".mirror/" + name).path
            #expect(symlink(target, planted) == 0)
            #expect(throws: MirrorError.fileSystem(FileSystemError(path: planted, problem: .symbolicLink))) {
                try open(directory)
            }
            #expect(isUntouched(target))
        }
    }

    @Test func aLinkPlantedAsTheLockIsRefusedAndItsTargetUntouched() async throws {
        try await refusesALinkPlanted(as: "lock") { _ = try RunLock(directory: $0) }
    }

    @Test func aLinkPlantedAsAThumbnailsPartialIsNeverFilledNorPublished() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let target = try victim(in: dir)
                let out = dir.appendingPathComponent("out")
                let partials = try MirrorDirectory(root: out).partialStore()
                let thumbnail = MediaURLBuilder(mediaBase: server.baseURL).item(for: ImgurImage(id: "aB3dE5f"))!.previewURL!
                #expect(symlink(target, partials.partPath(for: thumbnail)) == 0)
                let summary = try await mirrorTag(server, into: out)
                #expect(summary.isComplete)
                #expect(isUntouched(target))
                let published = out.appendingPathComponent("preview/aB3dE5fm.jpg").path
                var info = stat()
                #expect(lstat(published, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && info.st_nlink == 1)
                #expect(TestSupport.digest(ofFile: published) == TestSupport.digest(server.content(of: "/aB3dE5fm.jpg")))
            }
        }
    }

    @Test func aSinkNeverWritesThroughALinkOrIntoAFIFO() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let target = try victim(in: dir)
            let folder = try Directory.open(creating: dir.appendingPathComponent("partials").path)
            #expect(symlink(target, folder.path(of: "linked.part")) == 0)
            #expect(mkfifo(folder.path(of: "fifo.part"), 0o644) == 0)
            for name in ["linked.part", "fifo.part"] {
                let sink = try FileSink(location: FileLocation(directory: folder, name: name), offset: 0)
                try Array("image bytes".utf8).withUnsafeBytes { try sink.append($0) }
                try sink.flush(isLast: true)
                let info = try #require(folder.status(of: name))
                #expect(info.st_mode & S_IFMT == S_IFREG, "\(name)")
                #expect(TestSupport.bytes(at: folder.path(of: name)) == Array("image bytes".utf8))
            }
            #expect(isUntouched(target))
            // And a record is never written through a link either.
            let partials = PartialStore(folder: folder)
            let url = "https://cdn.test/planted.jpg"
            #expect(symlink(target, partials.partPath(for: url)) == 0)
            #expect(throws: FileSystemError.self) { try partials.save(PartialRecord(url: url, etag: "\"e\"")) }
        }
    }

    /// Writable by all, by the group alone, by others alone.
    static let sharedModes: [mode_t] = [0o777, 0o770, 0o702]

    @Test(arguments: [0o777, 0o702] as [mode_t])
    func aMirrorDirectoryOthersCanWriteToIsRefusedUnlessSticky(mode: mode_t) async throws {
        try await refusesUnlessSticky(mode: mode)
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give the folder another group"))
    func aMirrorDirectoryWritableByAGroupOthersShareIsRefusedUnlessSticky() async throws {
        try await refusesUnlessSticky(mode: 0o770, group: 65534)
    }

    /// A mirror root of `mode` (and of `group`, when given) is refused, and accepted once sticky.
    private func refusesUnlessSticky(mode: mode_t, group: gid_t? = nil) async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            if let group { #expect(chown(dir.path, geteuid(), group) == 0) }
            #expect(chmod(dir.path, mode) == 0)
            let error = #expect(throws: MirrorError.self) { try MirrorDirectory(root: dir) }
            #expect(error == .fileSystem(FileSystemError(path: dir.path, problem: .writableByOthers(mode: S_IFDIR | mode))))
            #expect(chmod(dir.path, 0o1000 | mode) == 0)
            #expect(throws: Never.self) { try MirrorDirectory(root: dir) }
        }
    }

    @Test func aFIFOPlantedAsAPartialNeitherBlocksNorIsKept() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out")
                let partials = try MirrorDirectory(root: out).partialStore()
                let thumbnail = MediaURLBuilder(mediaBase: server.baseURL).item(for: ImgurImage(id: "aB3dE5f"))!.previewURL!
                #expect(mkfifo(partials.partPath(for: thumbnail), 0o644) == 0)
                let summary = try await mirrorTag(server, into: out)
                #expect(summary.isComplete)
                #expect(TestSupport.digest(ofFile: out.appendingPathComponent("preview/aB3dE5fm.jpg").path)
                    == TestSupport.digest(server.content(of: "/aB3dE5fm.jpg")))
            }
        }
    }

    @Test func aStateFolderThatIsALinkIsRefused() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let elsewhere = dir.appendingPathComponent("elsewhere")
            try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
            let out = dir.appendingPathComponent("out")
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            #expect(symlink(elsewhere.path, out.appendingPathComponent(".mirror").path) == 0)
            let error = #expect(throws: MirrorError.self) { try MirrorDirectory(root: out) }
            #expect(error == .fileSystem(FileSystemError(path: out.path + "/.mirror", problem: .symbolicLink)))
            #expect(error?.description.contains("symbolic link") == true)
            #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty)
        }
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give a folder away"))
    func aStateFolderOfAnotherUserIsRefused() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let state = dir.appendingPathComponent(".mirror")
            try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
            #expect(chown(state.path, 65534, 65534) == 0)
            let error = #expect(throws: MirrorError.self) { try MirrorDirectory(root: dir) }
            #expect(error == .fileSystem(FileSystemError(path: state.path, problem: .ownedByAnotherUser(uid: 65534))))
        }
    }

    @Test(.enabled(if: UserAccounts.isPrivateGroup(getegid()), "this user has no private group"))
    func aMirrorDirectoryWritableByTheUsersOwnGroupIsAccepted() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            // `mkdir out` under Debian's and Ubuntu's umask 002, with the user's private group.
            #expect(chown(dir.path, geteuid(), getegid()) == 0)
            #expect(chmod(dir.path, 0o775) == 0)
            #expect(throws: Never.self) { try MirrorDirectory(root: dir) }
        }
    }

    @Test(arguments: sharedModes)
    func aMediaFolderWritableByOthersStopsTheRunNamingIt(mode: mode_t) async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let full = dir.appendingPathComponent("full")
                try FileManager.default.createDirectory(at: full, withIntermediateDirectories: true)
                #expect(chmod(full.path, mode) == 0)
                let summary = try await mirrorTag(server, into: dir)
                let stop = try #require(summary.stoppedBy?.mirrorError)
                #expect(stop == .fileSystem(FileSystemError(path: full.path, problem: .writableByOthers(mode: S_IFDIR | mode))))
                #expect(try FileManager.default.contentsOfDirectory(atPath: full.path).isEmpty)
            }
        }
    }

    @Test func aMediaFolderThatIsALinkIsNeverWrittenThrough() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let elsewhere = dir.appendingPathComponent("victim-folder")
                try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
                let out = dir.appendingPathComponent("out")
                try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
                #expect(symlink(elsewhere.path, out.appendingPathComponent("preview").path) == 0)
                let summary = try await mirrorTag(server, into: out)
                let stop = try #require(summary.stoppedBy?.mirrorError)
                #expect(stop == .fileSystem(FileSystemError(path: out.path + "/preview", problem: .symbolicLink)))
                #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty)
            }
        }
    }

    @Test func aLinkPlantedAsTheStateDatabaseIsRefused() async throws {
        try await refusesALinkPlanted(as: "state.sqlite3") { _ = try StateDatabase(directory: $0) }
    }

    @Test(.enabled(if: Mount.isPossible, "needs root allowed to mount a file system (CAP_SYS_ADMIN, no confinement against it)"))
    func aMediaFolderOnAnotherFileSystemGetsItsFilesByCopy() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let full = dir.appendingPathComponent("full")
                try FileManager.default.createDirectory(at: full, withIntermediateDirectories: true)
                try #require(Mount.tmpfs(at: full.path, size: "64m"), "cannot mount a tmpfs here")
                defer { Mount.unmount(full.path) }
                let summary = try await mirrorTag(server, into: dir)
                #expect(summary.isComplete)
                let names = try FileManager.default.contentsOfDirectory(atPath: full.path)
                #expect(!names.isEmpty)
                #expect(names.allSatisfy { !$0.hasPrefix(".") }, "no copy left half-way: \(names)")
                let mirror = try MirrorDirectory(root: dir)
                for name in names {
                    #expect(TestSupport.digest(ofFile: full.appendingPathComponent(name).path)
                        == TestSupport.digest(server.content(of: "/" + name)), "\(name)")
                    // The commit's last steps reach the copy, not the download it was made from:
                    // the record the copy took along comes off, and the server's date goes on.
                    #expect(try mirror.occupant(of: "full/" + name)?.record == nil, "\(name) still carries its record")
                    let modified = try FileManager.default.attributesOfItem(atPath: full.appendingPathComponent(name).path)[.modificationDate] as? Date
                    #expect(modified == server.lastModified(of: "/" + name).flatMap { HTTPDate.parse($0) }, "\(name)")
                }
                #expect(try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent(".mirror/partials").path).isEmpty)
            }
        }
    }

    @Test(.enabled(if: Mount.isPossible, "needs root allowed to mount a file system (CAP_SYS_ADMIN, no confinement against it)"))
    func aMoveAcrossFileSystemsKeepsTheRecordAndTakesTheFirstFreeName() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let other = dir.appendingPathComponent("other")
            try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
            try #require(Mount.tmpfs(at: other.path, size: "8m"), "cannot mount a tmpfs here")
            defer { Mount.unmount(other.path) }
            let here = try Directory.open(existing: dir.path)
            let there = try Directory.open(existing: other.path)
            let bytes = Array("the whole download".utf8)
            try TestSupport.write(bytes, to: dir.appendingPathComponent("download.part").path)
            let fd = try here.openFile("download.part", .write(create: false))
            #expect(Directory.setAttribute("user.mirror.partial", Array("its record".utf8), onFile: fd))
            close(fd)
            for taken in ["a.jpg", "a(1).jpg"] { try TestSupport.write([1], to: other.appendingPathComponent(taken).path) }

            let moved = try here.move("download.part", to: there, firstFreeOf: ["a.jpg", "a(1).jpg", "a(2).jpg"])
            #expect(moved?.name == "a(2).jpg")
            #expect(moved?.copied == true, "a descriptor open on the download is not the named file's")
            #expect(TestSupport.digest(ofFile: other.appendingPathComponent("a(2).jpg").path) == TestSupport.digest(bytes))
            // Until the state database records it, the file carries the record a kill leaves it with.
            #expect(there.attribute("user.mirror.partial", of: "a(2).jpg", limit: 64).map { String(decoding: $0, as: UTF8.self) } == "its record")
            #expect(!here.contains("download.part"))

            try TestSupport.write(bytes, to: dir.appendingPathComponent("second.part").path)
            #expect(try here.move("second.part", to: there, firstFreeOf: ["a.jpg"]) == nil)
            #expect(here.contains("second.part"))
            let left = try FileManager.default.contentsOfDirectory(atPath: other.path).sorted()
            #expect(left == ["a(1).jpg", "a(2).jpg", "a.jpg"], "no copy left behind: \(left)")
        }
    }
}
