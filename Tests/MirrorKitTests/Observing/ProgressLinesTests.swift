import Foundation
import Testing
@testable import MirrorKit

@Suite("The progress lines: counts, rates, ETA, cut to the terminal")
struct ProgressLinesTests {
    private func snapshot(
        phase: RunPhase, known: Int, done: Int, bytes: Int64, forced: [SchedulerStatus.Item] = []
    ) -> RunProgress {
        var snapshot = RunProgress()
        snapshot.phase = phase
        snapshot.filesKnown = known
        snapshot.filesDone = done
        snapshot.bytesReceived = bytes + forced.reduce(0) { $0 + $1.receivedBytes }
        snapshot.scheduler = SchedulerStatus(counts: [:], items: forced)
        return snapshot
    }

    @Test func whileCrawlingTheCountIsOpenAndThePageAndBudgetShow() {
        var lines = ProgressLines(label: "cats")
        var progress = snapshot(phase: .crawling, known: 120, done: 40, bytes: 2_000_000)
        progress.crawl = RunProgress.Crawl(page: 12, pagesRead: 3, estimatedPages: 183, apiCallsMade: 5, apiCallsLeft: 1180)
        let first = lines.lines(for: progress, at: 0, columns: 200)
        #expect(first == ["cats: 40 of 120+ files | 2.0 MB | page 12 of about 183 | API 1180 left"])
        progress.bytesReceived = 4_000_000
        progress.filesDone = 60
        let second = lines.lines(for: progress, at: 2, columns: 200)
        // A rate once there are two samples; no ETA while more files may be found.
        #expect(second.first?.contains("4.0 MB | 1.0 MB/s | page 12") == true, "\(second)")
        #expect(second.first?.contains("ETA") == false)
    }

    @Test func onceEveryFileIsKnownTheETAShows() {
        var lines = ProgressLines(label: "cats")
        _ = lines.lines(for: snapshot(phase: .downloading, known: 100, done: 0, bytes: 0), at: 0, columns: 200)
        _ = lines.lines(for: snapshot(phase: .downloading, known: 100, done: 16, bytes: 800_000), at: 8, columns: 200)
        let later = lines.lines(for: snapshot(phase: .downloading, known: 100, done: 20, bytes: 1_000_000), at: 10, columns: 200)
        // 20 files in 10 s, 80 left: 40 s; bytes at the rate of the last few seconds.
        #expect(later.first?.hasPrefix("cats: 20 of 100 files | 1.0 MB | 100.0 KB/s | ETA 40s") == true, "\(later)")
    }

    @Test func forcedItemsInFlightGetASecondLine() {
        var lines = ProgressLines(label: "cats")
        let forced = [
            // Resumed from a partial of 200 bytes: 250 received this run.
            SchedulerStatus.Item(url: "https://i.example/abc123.mp4", state: .downloading, isForced: true, completedBytes: 450,
                                 totalBytes: 1000, receivedBytes: 250),
            SchedulerStatus.Item(url: "https://i.example/def.gif", state: .paused, isForced: true, completedBytes: 300,
                                 totalBytes: nil, receivedBytes: 300),
            SchedulerStatus.Item(url: "https://i.example/thumb.jpg", state: .downloading, isForced: false, completedBytes: 10,
                                 totalBytes: 100, receivedBytes: 10),
        ]
        let drawn = lines.lines(for: snapshot(phase: .downloading, known: 3, done: 0, bytes: 0, forced: forced), at: 0, columns: 200)
        #expect(drawn.count == 2)
        #expect(drawn.last == "  forced: abc123.mp4 45% | def.gif 300 B paused")
        // The transfers' bytes count in what was received, but not what their partials held before.
        #expect(drawn.first?.contains("560 B") == true, "\(drawn)")
    }

    @Test func everyLineFitsANarrowTerminal() {
        var lines = ProgressLines(label: "a-very-long-tag-name")
        var progress = snapshot(phase: .crawling, known: 123_456, done: 12_345, bytes: 987_654_321, forced: [
            SchedulerStatus.Item(url: "https://i.example/\(String(repeating: "界", count: 30)).mp4", state: .downloading,
                                 isForced: true, completedBytes: 1, totalBytes: 2),
        ])
        progress.crawl = RunProgress.Crawl(page: 1, pagesRead: 1)
        for columns in [1, 2, 10, 24, 40, 80] {
            for line in lines.lines(for: progress, at: 0, columns: columns) {
                #expect(TerminalText.width(line) <= max(columns - 1, 0), "\(columns): \(line)")
            }
        }
        #expect(TerminalText.clip("界界界", toColumns: 4) == "界~")
        #expect(TerminalText.clip("short", toColumns: 10) == "short")
    }
}

extension ProgressLinesTests {
    @Test func theLastLargeFilesGetAnETAFromTheirBytes() {
        var lines = ProgressLines(label: "feed")
        func item(_ done: Int64) -> SchedulerStatus.Item {
            SchedulerStatus.Item(
                url: "https://h.example/big.tgz", state: .downloading, isForced: true, completedBytes: done, totalBytes: 10_000_000,
                receivedBytes: done)
        }
        _ = lines.lines(for: snapshot(phase: .downloading, known: 2, done: 1, bytes: 0, forced: [item(0)]), at: 0, columns: 200)
        let drawn = lines.lines(for: snapshot(phase: .downloading, known: 2, done: 1, bytes: 0, forced: [item(2_000_000)]), at: 1, columns: 200)
        // 8 MB left at 2 MB/s, though no file has settled meanwhile.
        #expect(drawn.first?.contains("2.0 MB/s | ETA 4s") == true, "\(drawn)")
    }
}

extension ProgressLinesTests {
    @Test func theLinesAreASCIIAndTheirBytesNeverGoBack() {
        var lines = ProgressLines(label: "café")
        var progress = snapshot(phase: .downloading, known: 2, done: 0, bytes: 0, forced: [
            SchedulerStatus.Item(url: "https://i.example/caf%C3%A9.mp4", state: .downloading, isForced: true,
                                 completedBytes: 5_000, totalBytes: 10_000, receivedBytes: 5_000),
        ])
        let first = lines.lines(for: progress, at: 0, columns: 200)
        #expect(first.allSatisfy { $0.unicodeScalars.allSatisfy { (0x20...0x7E).contains($0.value) } }, "\(first)")
        #expect(first.first?.hasPrefix("caf?: 0 of 2 files | 5.0 KB") == true, "\(first)")
        #expect(first.last == "  forced: caf%C3%A9.mp4 50%")
        // A count that went back (it cannot, from the scheduler) would not make a rate below zero.
        progress.bytesReceived = 1_000
        let later = lines.lines(for: progress, at: 1, columns: 200)
        #expect(later.first?.contains("-") == false, "\(later)")
    }
}
