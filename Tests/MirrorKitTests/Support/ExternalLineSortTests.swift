import Foundation
import Testing
@testable import MirrorKit

/// Lines sorted through a file of their own: whatever order they come in, past the memory of
/// one run or of one merge, they come back in byte order, and nothing is left in the directory.
@Suite("Sorting lines on disk")
struct ExternalLineSortTests {
    /// Lines of every shape: sorted stretches, reversed ones, repeats, bytes above 0x7F
    /// (compared unsigned).
    private func fill(_ sort: ExternalLineSort, count: Int) -> [[UInt8]] {
        var generator = SystemRandomNumberGenerator()
        var all: [[UInt8]] = []
        while all.count < count {
            var batch = (0..<Int.random(in: 1...40, using: &generator)).map { serial in
                Array("k\(UInt16.random(in: 0..<2000, using: &generator)) \(serial)".utf8) + (serial % 5 == 0 ? [0xC3, 0xA9] : [])
            }
            switch all.count % 4 {
            case 0: batch.sort { $0.lexicographicallyPrecedes($1) }
            case 1: batch.sort { $1.lexicographicallyPrecedes($0) }
            default: break
            }
            if let first = batch.first { batch.append(first) }
            for line in batch { sort.append(line: line) }
            all += batch
        }
        return all
    }

    /// Whether `merged` is `lines` in byte order; a failure shows where, not the lines.
    private static func inOrder(_ merged: [[UInt8]], of lines: [[UInt8]]) -> Bool {
        let sorted = lines.sorted { $0.lexicographicallyPrecedes($1) }
        guard merged != sorted else { return true }
        let at = zip(merged, sorted).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(merged.count, sorted.count)
        Issue.record("\(merged.count) lines merged of \(sorted.count); the first out of place is line \(at)")
        return false
    }

    @Test(arguments: [(heldLimit: 4 << 20, runs: 0...0), (heldLimit: 8 << 10, runs: 10...64), (heldLimit: 1 << 10, runs: 65...1000)])
    func linesInAnyOrderComeBackInByteOrder(heldLimit: Int, runs: ClosedRange<Int>) async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let directory = try Directory.open(creating: dir.appendingPathComponent("spool").path)
            let sort = ExternalLineSort(spillingInto: directory, heldLimit: heldLimit)
            let all = fill(sort, count: 20_000)
            // In memory; in runs merged at once; in more runs than one merge takes.
            #expect(runs.contains(sort.runs.count), "\(sort.runs.count) runs")
            var merged: [[UInt8]] = []
            try sort.merge { merged.append($0) }
            #expect(Self.inOrder(merged, of: all))
            #expect(directory.names().isEmpty, "\(directory.names())")
        }
    }

    @Test func withoutADirectoryTheLinesStayInMemory() throws {
        let sort = ExternalLineSort(spillingInto: nil, heldLimit: 1 << 10)
        let all = fill(sort, count: 2_000)
        #expect(sort.runs.isEmpty)
        var merged: [[UInt8]] = []
        try sort.merge { merged.append($0) }
        #expect(Self.inOrder(merged, of: all))
    }

    /// A run that cannot be written (here: its file made read-only for a while) leaves its lines
    /// in memory, and nothing of it reaches a run written later (a merge of more runs than one
    /// merge takes writes one).
    @Test func aRunThatCouldNotBeWrittenStaysInMemoryAndSpoilsNoLaterRun() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let directory = try Directory.open(creating: dir.appendingPathComponent("spool").path)
            let sort = ExternalLineSort(spillingInto: directory, heldLimit: 1 << 10)
            var all = fill(sort, count: 10_000)
            #expect(sort.runs.count > 64)
            let spool = try #require(sort.spool)
            let saved = dup(spool.descriptor)
            let readOnly = open(dir.appendingPathComponent("read-only").path, O_RDONLY | O_CREAT, 0o600)
            #expect(dup2(readOnly, spool.descriptor) == spool.descriptor)
            let written = sort.runs.count
            all += fill(sort, count: 2_000)
            #expect(sort.runs.count == written)
            dup2(saved, spool.descriptor)
            close(saved)
            close(readOnly)
            var merged: [[UInt8]] = []
            try sort.merge { merged.append($0) }
            #expect(Self.inOrder(merged, of: all))
        }
    }

    /// A file of no newlines is not read whole: past the longest line allowed, the read fails.
    @Test func aLineLongerThanAllowedFailsTheRead() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("text").path
            try Data(repeating: 0x41, count: 3 << 20).write(to: URL(fileURLWithPath: path))
            let fd = open(path, O_RDONLY)
            defer { close(fd) }
            var reader = LineReader(fd: fd, range: 0..<(3 << 20), path: path, longestLine: 1 << 20)
            #expect(throws: FileSystemError(path: path, problem: .lineTooLong(limit: 1 << 20))) { try reader.next() }
        }
    }

    @Test func aLastLineWithoutItsNewlineIsALine() async throws {
        try await TestSupport.withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("text").path
            let text = Data("one\ntwo\n\nthree".utf8)
            try text.write(to: URL(fileURLWithPath: path))
            let fd = open(path, O_RDONLY)
            defer { close(fd) }
            var reader = LineReader(fd: fd, range: 0..<Int64(text.count), path: path, chunk: 4)
            var read: [String] = []
            while let line = try reader.next() { read.append(String(decoding: line, as: UTF8.self)) }
            #expect(read == ["one", "two", "", "three"])
        }
    }
}
