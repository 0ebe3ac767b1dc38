import Foundation
import Testing
@testable import MirrorKit

/// `mirror status` counts what is on disk, not what was once recorded, however large the mirror.
@Suite("Status of a mirror")
struct StatusReportTests {
    @Test func filesMissingFromTheDiskAreCountedAcrossPagesOfTheRecord() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let directory = try MirrorDirectory(root: dir)
            let state = try StateDatabase(directory: directory)
            // More files than one page of the record (1,000): every page is looked at.
            let count = 2_345
            for index in 0..<count {
                let path = "full/\(index).jpg"
                try await state.record(MirroredFile(
                    path: path, item: "https://i.example/\(index).jpg", source: "tag t", url: "https://i.example/\(index).jpg",
                    etag: nil, lastModified: nil, bytes: 1, md5: nil))
            }
            // Every seventh one deleted by hand, past the first page too.
            try FileManager.default.createDirectory(at: dir.appendingPathComponent("full"), withIntermediateDirectories: true)
            for index in 0..<count where !index.isMultiple(of: 7) {
                try Data([1]).write(to: dir.appendingPathComponent("full/\(index).jpg"))
            }
            let report = await StatusReport.gather(in: directory) { _ in false }
            #expect(report.files?.missing == (0..<count).count { $0.isMultiple(of: 7) })
            #expect(report.files?.files == count)
        }
    }
}
