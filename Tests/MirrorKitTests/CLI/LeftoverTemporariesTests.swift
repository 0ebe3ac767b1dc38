import Foundation
import Testing
@testable import MirrorKit

/// A run killed while it wrote a file by way of a temporary name (a copy across file systems, a
/// sidecar, the status file) leaves `.mirror-tmp.PID.N` behind: the next run, under the lock,
/// removes those of other processes, anywhere in the mirror, never through a link; a dry run
/// removes nothing.
@Suite("Temporary files that killed runs left")
struct LeftoverTemporariesTests {
    @Test func theNextRunRemovesThemAndNothingElse() async throws {
        try await TestSupport.withServer { server in
            try await MirrorProcess.withClientID { dir, idFile in
                let out = dir.appendingPathComponent("out")
                let outside = dir.appendingPathComponent("outside.txt")
                try Data("not the mirror's".utf8).write(to: outside)
                let first = try await MirrorProcess.run(MirrorProcess.fixtureArguments("cats", out: out.path, server: server, idFile: idFile) + ["--no-config"])
                #expect(first.status == 0, "\(first.stderr)")

                let manager = FileManager.default
                try manager.createDirectory(at: out.appendingPathComponent("meta/deep/er"), withIntermediateDirectories: true)
                let planted = ["full/.mirror-tmp.999999.1", "meta/deep/er/.mirror-tmp.999999.2", ".mirror/.mirror-tmp.999999.3"]
                for name in planted { try Data("half a copy".utf8).write(to: out.appendingPathComponent(name)) }
                let link = out.appendingPathComponent("preview/.mirror-tmp.999999.4")
                try manager.createSymbolicLink(at: link, withDestinationURL: outside)
                // Through a link to a folder, and in a mirror nested in this one: not this mirror's.
                let elsewhere = dir.appendingPathComponent("elsewhere")
                try manager.createDirectory(at: elsewhere, withIntermediateDirectories: true)
                try Data("another's".utf8).write(to: elsewhere.appendingPathComponent(".mirror-tmp.999999.6"))
                try manager.createSymbolicLink(at: out.appendingPathComponent("meta/linked"), withDestinationURL: elsewhere)
                try manager.createDirectory(at: out.appendingPathComponent("meta/nested/.mirror"), withIntermediateDirectories: true)
                let kept = ["full/.mirror-tmpx", "full/mine.mirror-tmp.999999.5", "meta/nested/.mirror-tmp.999999.7"]
                for name in kept { try Data("the user's".utf8).write(to: out.appendingPathComponent(name)) }

                let dryRun = try await MirrorProcess.run(
                    MirrorProcess.fixtureArguments("cats", out: out.path, server: server, idFile: idFile) + ["--no-config", "--dry-run"])
                #expect(dryRun.status == 0, "\(dryRun.stderr)")
                for name in planted { #expect(manager.fileExists(atPath: out.appendingPathComponent(name).path), "\(name)") }

                let next = try await MirrorProcess.run(MirrorProcess.fixtureArguments("cats", out: out.path, server: server, idFile: idFile) + ["--no-config"])
                #expect(next.status == 0, "\(next.stderr)")
                for name in planted { #expect(!manager.fileExists(atPath: out.appendingPathComponent(name).path), "\(name)") }
                #expect((try? manager.destinationOfSymbolicLink(atPath: link.path)) == nil, "the link itself is removed")
                #expect(try String(contentsOf: outside, encoding: .utf8) == "not the mirror's")
                for name in kept { #expect(manager.fileExists(atPath: out.appendingPathComponent(name).path), "\(name)") }
                #expect(manager.fileExists(atPath: elsewhere.appendingPathComponent(".mirror-tmp.999999.6").path))
            }
        }
    }

    /// A folder of thousands of files, read entry by entry rather than listed whole in memory:
    /// each temporary is removed and every other file is kept.
    @Test func aLargeFolderLosesItsTemporariesAndNothingElse() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let folder = try Directory.open(creating: dir.appendingPathComponent("full").path)
            var temporaries: Set<String> = []
            for number in 0..<6_000 {
                let name = number % 3 == 0 ? ".mirror-tmp.999999.\(number)" : "image-\(number).jpg"
                if number % 3 == 0 { temporaries.insert(folder.path(of: name)) }
                let fd = try folder.openFile(name, .write(create: true, exclusive: true))
                close(fd)
            }
            let removed = folder.removeTemporariesOfOtherProcesses()
            #expect(removed.count == temporaries.count)
            #expect(Set(removed) == temporaries)
            let left = folder.names()
            #expect(left.count == 4_000)
            #expect(left.allSatisfy { $0.hasPrefix("image-") })
        }
    }
}
