import CMirrorSystem
import FixtureServer
import Foundation
import Testing
@testable import MirrorKit

/// `--dry-run` reads the listing and prints what a run would fetch, writing nothing at all: no
/// file, no state, no cursor.
@Suite("--dry-run: what a run would fetch, nothing written", .serialized, .timeLimit(.minutes(3)))
struct DryRunTests {
    private func arguments(_ server: FixtureServer, _ out: String, _ idFile: String) -> [String] {
        MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile)
    }

    /// Every file and folder under `root` (`.mirror` included) with its size, modification time,
    /// extended attributes and bytes: what a run that writes nothing leaves as it was.
    private func snapshot(_ root: String) throws -> [String: String] {
        var entries: [String: String] = [:]
        guard let walker = FileManager.default.enumerator(atPath: root) else { return entries }
        for case let path as String in walker {
            let attributes = try FileManager.default.attributesOfItem(atPath: root + "/" + path)
            let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            var contents = ""
            if attributes[.type] as? FileAttributeType == .typeRegular {
                contents = try Data(contentsOf: URL(fileURLWithPath: root + "/" + path)).base64EncodedString()
            }
            var names = [CChar](repeating: 0, count: 4096)
            let fd = open(root + "/" + path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            defer { if fd >= 0 { close(fd) } }
            let length = fd >= 0 ? mirror_flistxattr(fd, &names, names.count) : 0
            let attributeNames = length > 0 ? String(decoding: names[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
            entries[path] = "\(attributes[.size] ?? 0) \(modified) [\(attributeNames)] \(contents)"
        }
        return entries
    }

    /// The `path`s of the `URL -> path (size)` lines, each printed once.
    private func plannedPaths(_ stdout: String, sourceLocation: SourceLocation = #_sourceLocation) -> Set<String> {
        let paths = stdout.split(separator: "\n").compactMap { line -> String? in
            guard let arrow = line.range(of: " -> ") else { return nil }
            return String(line[arrow.upperBound...].prefix { $0 != " " && $0 != "," })
        }
        #expect(Set(paths).count == paths.count, "a file was planned twice: \(stdout)", sourceLocation: sourceLocation)
        return Set(paths)
    }

    private func mirroredPaths(_ out: String) throws -> Set<String> {
        var paths: Set<String> = []
        for folder in ["full", "preview"] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: out + "/" + folder)) ?? [] {
                paths.insert(folder + "/" + name)
            }
        }
        return paths
    }

    @Test func aFirstDryRunListsEveryFileCreatesNothingAndFetchesNoMedia() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = arguments(server, out, idFile)
                let dry = try await MirrorProcess.run(arguments + ["--dry-run"])
                #expect(dry.status == 0, "\(dry.stderr)")
                #expect(!FileManager.default.fileExists(atPath: out), "a dry run made the mirror directory")
                #expect(server.requests.allSatisfy { $0.path.hasPrefix("/3/") }, "a dry run asked for media")
                let planned = plannedPaths(dry.stdout)
                #expect(dry.stdout.contains("cats: dry run: \(planned.count) files would be fetched"), "\(dry.stdout)")
                #expect(dry.stdout.contains("-> full/aB3dE5f.jpg (180.0 KB)"), "the API's size is shown: \(dry.stdout)")

                // The real run fetches exactly what the dry run said it would.
                let real = try await MirrorProcess.run(arguments)
                #expect(real.status == 0, "\(real.stderr)")
                // But for the file its host has removed, which only asking for it tells.
                let mirrored = try mirroredPaths(out)
                #expect(mirrored.isSubset(of: planned))
                #expect(planned.subtracting(mirrored).allSatisfy { $0.contains("Rm0vEd1") }, "\(planned.subtracting(mirrored))")
            }
        }
    }

    @Test func aDryRunOnAMirrorChangesNoFileNorTheStateAndNamesWhatIsMissing() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = arguments(server, out, idFile)
                #expect(try await MirrorProcess.run(arguments).status == 0)
                try FileManager.default.removeItem(atPath: out + "/full/aB3dE5f.jpg")
                let before = try snapshot(out)
                let mediaRequests = { server.requests.count { !$0.path.hasPrefix("/3/") } }
                let media = mediaRequests()

                // What would write elsewhere is asked for too: sidecars, a hook, a metrics file.
                let metrics = dir.appendingPathComponent("metrics.prom").path
                let hookMark = dir.appendingPathComponent("hook-ran").path
                let scratchParent = dir.appendingPathComponent("tmp").path
                try FileManager.default.createDirectory(atPath: scratchParent, withIntermediateDirectories: true)
                let dry = try await MirrorProcess.run(
                    arguments + ["--dry-run", "--metadata", "--exec-shell", "touch \(hookMark)", "--metrics-file", metrics],
                    environment: ["TMPDIR": scratchParent])
                #expect(dry.status == 0, "\(dry.stderr)")
                #expect(plannedPaths(dry.stdout) == ["full/aB3dE5f.jpg"], "\(dry.stdout)")
                #expect(dry.stdout.contains("missing from the disk"), "\(dry.stdout)")
                #expect(try snapshot(out) == before, "the dry run changed the mirror or its state")
                #expect(mediaRequests() == media)
                #expect(!FileManager.default.fileExists(atPath: metrics) && !FileManager.default.fileExists(atPath: hookMark))
                #expect(try FileManager.default.contentsOfDirectory(atPath: scratchParent).isEmpty, "the scratch copy was left behind")
                // Nothing was recorded: a second dry run plans the same, and the real run restores it.
                let again = try await MirrorProcess.run(arguments + ["--dry-run"])
                #expect(plannedPaths(again.stdout) == ["full/aB3dE5f.jpg"], "\(again.stdout)")
                let real = try await MirrorProcess.run(arguments)
                #expect(real.stdout.contains("1 of them missing from the disk and fetched again"), "\(real.stdout)")
            }
        }
    }

    @Test func aDryRunDoesNotMoveTheCursor() async throws {
        try await TestSupport.withServer { server in
            server.addGeneratedTag("many", pages: 3, perPage: 20)
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = MirrorProcess.fixtureArguments("many", out: out, server: server, idFile: idFile) + [
                    "--no-previews",
                ]
                // The first page is mirrored; the pass stands at page 1.
                #expect(try await MirrorProcess.run(arguments + ["--pages", "1"]).status == 0)
                let firstPage = try mirroredPaths(out)
                let dry = try await MirrorProcess.run(arguments + ["--dry-run"])
                #expect(dry.status == 0, "\(dry.stderr)")
                let planned = plannedPaths(dry.stdout)
                #expect(!planned.isEmpty && planned.isDisjoint(with: firstPage), "\(dry.stdout)")
                // The real run reads from where the last real run left the pass, as the dry run did.
                let real = try await MirrorProcess.run(arguments)
                #expect(real.status == 0, "\(real.stderr)")
                #expect(try mirroredPaths(out).subtracting(firstPage) == planned)
            }
        }
    }

    @Test func twoSourcesListingTheSameFilePlanItOnce() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                // The album is in the tag too: a real run fetches its files once.
                let arguments = MirrorProcess.fixtureArguments("cats", out: out, server: server, idFile: idFile) + ["https://imgur.com/a/Ef1gH"]
                let dry = try await MirrorProcess.run(arguments + ["--dry-run"])
                #expect(dry.status == 0, "\(dry.stderr)")
                let planned = plannedPaths(dry.stdout)
                #expect(planned.contains("full/Ij2kL3m.jpg"))
                #expect(dry.stdout.contains("album Ef1gH: dry run: 0 files would be fetched"), "\(dry.stdout)")
            }
        }
    }

    @Test func aJSONDryRunStillSaysWhatWentWrong() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let dry = try await MirrorProcess.run(
                    MirrorProcess.fixtureArguments("catz", out: out, server: server, idFile: idFile) + ["--dry-run", "--log-format", "json"])
                #expect(dry.status == 69, "\(dry.stderr)")
                #expect(dry.stdout.isEmpty, "\(dry.stdout)")
                #expect(dry.stderr.contains("no such tag: catz"), "\(dry.stderr)")
            }
        }
    }

    @Test func jsonLinesCarryURLPathAndBytesWhenKnown() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let dry = try await MirrorProcess.run(arguments(server, out, idFile) + ["--dry-run", "--log-format", "json"])
                #expect(dry.status == 0, "\(dry.stderr)")
                let objects = try dry.stdout.split(separator: "\n").map {
                    try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "\($0)")
                }
                #expect(objects.count == plannedPaths(try await MirrorProcess.run(arguments(server, out, idFile) + ["--dry-run"]).stdout).count)
                let full = try #require(objects.first { $0["path"] as? String == "full/aB3dE5f.jpg" })
                #expect(full["url"] as? String == "\(server.baseURL)/aB3dE5f.jpg")
                #expect(full["bytes"] as? Int == 180_000)
                #expect(full["source"] as? String == "tag cats")
                #expect(objects.allSatisfy { $0["url"] is String && $0["path"] is String })
                #expect(!FileManager.default.fileExists(atPath: out))
            }
        }
    }

    @Test func aFeedDryRunListsItsEnclosuresAndFetchesNone() async throws {
        try await TestSupport.withServer { server in
            try await TestSupport.withTemporaryDirectory { dir in
                let out = dir.appendingPathComponent("out").path
                let feed = "\(server.baseURL)/feeds/podcast.rss"
                let dry = try await MirrorProcess.run(["feed", feed, "--out", out, "--dry-run"])
                #expect(dry.status == 0, "\(dry.stderr)")
                #expect(server.requests.allSatisfy { $0.path.hasPrefix("/feeds/") }, "\(server.requests.map(\.path))")
                let planned = plannedPaths(dry.stdout)
                #expect(!planned.isEmpty)
                #expect(!FileManager.default.fileExists(atPath: out))
                let real = try await MirrorProcess.run(["feed", feed, "--out", out])
                #expect(real.status == 0, "\(real.stderr)")
                let saved = Set(try FileManager.default.contentsOfDirectory(atPath: out + "/enclosures").map { "enclosures/" + $0 })
                #expect(saved == planned)
            }
        }
    }

    @Test func aDryRunWhileARunHoldsTheMirrorIsRefusedAndPlantedStateLinksAreNotRead() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out").path
                let arguments = arguments(server, out, idFile)
                #expect(try await MirrorProcess.run(arguments).status == 0)
                let lock = open(out + "/.mirror/lock", O_RDWR)
                #expect(flock(lock, LOCK_EX | LOCK_NB) == 0)
                let busy = try await MirrorProcess.run(arguments + ["--dry-run"])
                close(lock)
                #expect(busy.status != 0 && busy.stderr.contains("lock"), "\(busy.stderr)")

                // A state file that is a link to another's is not read through.
                let elsewhere = dir.appendingPathComponent("elsewhere.sqlite3").path
                try FileManager.default.moveItem(atPath: out + "/.mirror/state.sqlite3", toPath: elsewhere)
                try FileManager.default.createSymbolicLink(atPath: out + "/.mirror/state.sqlite3", withDestinationPath: elsewhere)
                let planted = try await MirrorProcess.run(arguments + ["--dry-run"])
                #expect(planted.status != 0 && planted.stderr.contains("state.sqlite3"), "\(planted.stderr)")
            }
        }
    }

    @Test func theSharedPostgreSQLStateIsRefusedWithAReason() async throws {
        try await MirrorProcess.withClientID { dir, idFile in
            let run = try await MirrorProcess.run([
                "cats", "--out", dir.appendingPathComponent("out").path, "--client-id-file", idFile,
                "--state", "postgresql://mirror@db.example/mirror", "--dry-run",
            ])
            #expect(run.status == 78, "\(run.status) \(run.stderr)")
            #expect(run.stderr.contains("--dry-run"), "\(run.stderr)")
        }
    }
}
