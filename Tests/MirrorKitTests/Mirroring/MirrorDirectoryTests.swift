import Foundation
import Testing
@testable import MirrorKit

@Suite("Mirror directory: naming, committing, locking", .timeLimit(.minutes(1)))
struct MirrorDirectoryTests {
    /// A finished download's `.part` file in `.mirror`, by name.
    private func partial(in directory: MirrorDirectory, _ text: String) throws -> String {
        let name = UUID().uuidString + ".part"
        try TestSupport.write(Array(text.utf8), to: directory.stateDirectory.appendingPathComponent(name).path)
        return name
    }

    @Test func commitsUnderTheFinalNameAndRemovesThePartial() async throws {
        try await TestSupport.withTemporaryDirectory { root in
            let directory = try MirrorDirectory(root: root)
            let part = try partial(in: directory, "one")
            #expect(try directory.commit(part, from: directory.stateFolder, as: "full/a.jpg", mode: .skipIfExists) == "full/a.jpg")
            #expect(TestSupport.bytes(at: root.appendingPathComponent("full/a.jpg").path) == Array("one".utf8))
            #expect(!directory.stateFolder.contains(part))
        }
    }

    @Test func aDownloadWhoseSyncFailsIsDeletedNotLeftForTheNextRunToName() async throws {
        try await TestSupport.withTemporaryDirectory { root in
            let directory = try MirrorDirectory(root: root)
            let part = try partial(in: directory, "bytes the disk may not hold")
            let record = PartialRecord(url: "https://example.com/a.mp3", etag: #""v1""#, lastModified: nil, totalLength: 27)
            // As a write-back that failed reports itself, once (ENOSPC or EIO from fdatasync).
            let failingSync: (Int32) -> Int32 = { _ in errno = EIO; return -1 }
            #expect(throws: MirrorError.self) {
                _ = try directory.synced(part, in: directory.stateFolder, beforeSync: { PartialStore.attachForCommit(record, toFile: $0) }, sync: failingSync)
            }
            #expect(!directory.stateFolder.contains(part))
            // Whatever error the file system kept for the failed write-back (NFS's ESTALE here).
            let stale = try partial(in: directory, "bytes NFS may not hold")
            #expect(throws: MirrorError.self) {
                _ = try directory.synced(stale, in: directory.stateFolder, sync: { _ in errno = ESTALE; return -1 })
            }
            #expect(!directory.stateFolder.contains(stale))
            // A file system that cannot sync at all (EINVAL) lost nothing: the partial stays.
            let kept = try partial(in: directory, "bytes on a file system without fsync")
            #expect(throws: MirrorError.self) {
                _ = try directory.synced(kept, in: directory.stateFolder, sync: { _ in errno = EINVAL; return -1 })
            }
            #expect(directory.stateFolder.contains(kept))
        }
    }

    @Test func anUncommitWhosePartialNameIsTakenSaysSoAndLeavesTheFile() async throws {
        try await TestSupport.withTemporaryDirectory { root in
            let directory = try MirrorDirectory(root: root)
            let part = try partial(in: directory, "one")
            let name = try #require(try directory.commit(part, from: directory.stateFolder, as: "full/a.jpg", mode: .skipIfExists))
            // Another download of the URL began since: its partial holds the name.
            try TestSupport.write(Array("other".utf8), to: directory.stateDirectory.appendingPathComponent(part).path)
            #expect(throws: MirrorError.self) { try directory.uncommit(name, backTo: directory.stateFolder, as: part) }
            #expect(TestSupport.bytes(at: root.appendingPathComponent("full/a.jpg").path) == Array("one".utf8))
            #expect(TestSupport.bytes(at: directory.stateDirectory.appendingPathComponent(part).path) == Array("other".utf8))
        }
    }

    @Test func newFileModeNeverOverwrites() async throws {
        try await TestSupport.withTemporaryDirectory { root in
            let directory = try MirrorDirectory(root: root)
            for text in ["one", "two", "three"] {
                _ = try directory.commit(try partial(in: directory, text), from: directory.stateFolder, as: "full/a.jpg", mode: .newFile)
            }
            #expect(TestSupport.bytes(at: root.appendingPathComponent("full/a.jpg").path) == Array("one".utf8))
            #expect(TestSupport.bytes(at: root.appendingPathComponent("full/a(1).jpg").path) == Array("two".utf8))
            #expect(TestSupport.bytes(at: root.appendingPathComponent("full/a(2).jpg").path) == Array("three".utf8))
        }
    }

    @Test func skipIfExistsKeepsTheOldFileAndDropsTheNewOne() async throws {
        try await TestSupport.withTemporaryDirectory { root in
            let directory = try MirrorDirectory(root: root)
            _ = try directory.commit(try partial(in: directory, "old"), from: directory.stateFolder, as: "a.jpg", mode: .skipIfExists)
            let part = try partial(in: directory, "new")
            #expect(try directory.commit(part, from: directory.stateFolder, as: "a.jpg", mode: .skipIfExists) == nil)
            #expect(TestSupport.bytes(at: root.appendingPathComponent("a.jpg").path) == Array("old".utf8))
            #expect(!directory.stateFolder.contains(part))
        }
    }

    @Test(arguments: [
        "../escape.jpg", "/etc/passwd", "a/../../b", ".mirror/lock", "", "a//b", "./a", "a/", "/", ".", "..", ".mirror",
        "a/.", "a/..", "a/b/..", "a\u{0}b", "a/b\u{0}",
    ])
    func refusesPathsOutsideTheMirror(_ relative: String) async throws {
        try await TestSupport.withTemporaryDirectory { root in
            let directory = try MirrorDirectory(root: root)
            #expect(throws: MirrorError.unsafePath(relative)) { try directory.path(of: relative) }
        }
    }

    /// Names that only look like the refused ones are plain names, and a path is cut at its last
    /// slash also when its folders' names are not ASCII.
    @Test func takesPlainPathsAndCutsThemAtTheirLastSlash() async throws {
        try await TestSupport.withTemporaryDirectory { root in
            let directory = try MirrorDirectory(root: root)
            for relative in ["a.jpg", "...", ".hidden", "x/.mirror/b", ".mirrorx/a", "a/.../b", "a/..b/.c"] {
                #expect(try directory.absolutePath(of: relative) == root.path + "/" + relative)
            }
            #expect(try directory.replaceSmallFile("ü/ñ 日本/é.txt", with: Array("x".utf8)))
            #expect(TestSupport.bytes(at: root.appendingPathComponent("ü/ñ 日本/é.txt").path) == Array("x".utf8))
            #expect(try directory.fileExists("ü/ñ 日本/é.txt"))
            #expect(try !directory.fileExists("ü/ñ 日本/e.txt"))
        }
    }

    @Test func numbersTheNameBeforeTheExtension() {
        #expect(MirrorDirectory.numbered("full/a.b.jpg", 2) == "full/a.b(2).jpg")
        #expect(MirrorDirectory.numbered("full/noext", 1) == "full/noext(1)")
        #expect(MirrorDirectory.numbered("dir.x/.hidden", 1) == "dir.x/.hidden(1)")
    }

    /// Read back from the name: which version of a file a name is, cut names included.
    @Test func tellsWhichVersionANameIs() {
        let long = "full/" + String(repeating: "n", count: 250) + ".jpg"
        for name in ["full/a.b.jpg", "full/noext", "dir.x/.hidden", "full/(3).jpg", "enclosures/v1.0 (draft)", "a/b(1).c(2)", long] {
            #expect(MirrorDirectory.versionNumber(of: name, among: name) == 0)
            for number in [1, 2, 12, 123_456] {
                #expect(MirrorDirectory.versionNumber(of: MirrorDirectory.numbered(name, number), among: name) == number, "\(name) \(number)")
            }
        }
        #expect(MirrorDirectory.versionNumber(of: "full/other(1).jpg", among: "full/a.jpg") == nil)
        #expect(MirrorDirectory.versionNumber(of: "full/a(0).jpg", among: "full/a.jpg") == nil)
        #expect(MirrorDirectory.versionNumber(of: "full/a(x).jpg", among: "full/a.jpg") == nil)
        #expect(MirrorDirectory.versionNumber(of: "preview/a(1).jpg", among: "full/a.jpg") == nil)
    }

    /// The name an item's new versions are named after, whatever order their rows came in.
    @Test func tellsWhatAnItemsVersionsAreNamedAfter() {
        #expect(MirrorDirectory.baseName(of: "full/a.jpg", among: ["full/a(1).jpg", "full/a.jpg"]) == "full/a.jpg")
        #expect(MirrorDirectory.baseName(of: "full/a(2).jpg", among: ["full/a.jpg", "full/a(1).jpg", "full/a(2).jpg"]) == "full/a.jpg")
        // A mirror an earlier build named after the wrong version finds its way back.
        #expect(MirrorDirectory.baseName(of: "full/x(1)(1).jpg", among: ["full/x(1).jpg", "full/x.jpg", "full/x(1)(1).jpg"]) == "full/x.jpg")
        // A feed entry whose releases have names of their own: the newest's.
        #expect(MirrorDirectory.baseName(of: "enclosures/v2.zip", among: ["enclosures/v1.zip", "enclosures/v2.zip"]) == "enclosures/v2.zip")
        // A name of its own that looks numbered, and one the item never had: not made up.
        #expect(MirrorDirectory.baseName(of: "enclosures/ep(1).mp3", among: ["enclosures/ep(1).mp3"]) == "enclosures/ep(1).mp3")
        #expect(MirrorDirectory.baseName(of: "full/I(1).jpg", among: ["full/I(2).jpg", "full/I(1).jpg"]) == "full/I(1).jpg")
    }

    @Test func aSecondRunCannotTakeTheLock() async throws {
        try await TestSupport.withTemporaryDirectory { root in
            let directory = try MirrorDirectory(root: root)
            let lock = try RunLock(directory: directory)
            #expect(throws: MirrorError.locked(path: lock.path)) { try RunLock(directory: directory) }
            withExtendedLifetime(lock) {}
        }
    }

    @Test func aReleasedLockCanBeTakenAgain() async throws {
        try await TestSupport.withTemporaryDirectory { root in
            let directory = try MirrorDirectory(root: root)
            _ = try RunLock(directory: directory)
            #expect(throws: Never.self) { _ = try RunLock(directory: directory) }
        }
    }

    @Test func aFileWhereADirectoryShouldBeIsAClearError() async throws {
        try await TestSupport.withTemporaryDirectory { root in
            let blocker = root.appendingPathComponent("blocker")
            try TestSupport.write([1], to: blocker.path)
            #expect(throws: MirrorError.fileSystem(FileSystemError(path: blocker.path + "/out", errno: ENOTDIR))) {
                try MirrorDirectory(root: blocker.appendingPathComponent("out"))
            }
        }
    }

    @Test func aStateDatabaseFromANewerMirrorStopsTheRunAndStaysPut() async throws {
        try await TestSupport.withTemporaryDirectory { root in
            let directory = try MirrorDirectory(root: root)
            let path = directory.stateDirectory.appendingPathComponent("state.sqlite3").path
            _ = try await ChildProcess(
                executable: "/usr/bin/sqlite3", arguments: [path, "CREATE TABLE mirrored (url TEXT); PRAGMA user_version = 99;"]
            ).run()
            #expect(throws: MirrorError.self) { try StateDatabase(directory: directory) }
            #expect(FileManager.default.fileExists(atPath: path))
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.stateDirectory.path)
            #expect(!names.contains { $0.contains("damaged") })
        }
    }
}
