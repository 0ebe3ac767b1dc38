import ArgumentParser
import Foundation
import MirrorKit

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show what a mirror directory's run is doing, where its crawls stand, the API budget, and the partial downloads it keeps.")

    @Option(name: .shortAndLong, help: "The mirror directory.")
    var out: String

    @Option(help: ArgumentHelp(
        "List the versions the mirror holds of one item, named by a file (its path in the mirror, or its name), a URL, or a feed entry.",
        valueName: "name"))
    var versions: String?

    func run() async throws {
        let root = URL(fileURLWithPath: out)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.appendingPathComponent(".mirror").path, isDirectory: &isDirectory),
              isDirectory.boolValue
        else {
            throw ExitStatus.fail("\(out) is not a mirror directory (no .mirror inside)", status: ExitStatus.noInput)
        }
        // Looking changes nothing: status makes no folder, and reads a mirror another user runs.
        let directory: MirrorDirectory
        do {
            directory = try MirrorDirectory.inspecting(root: root)
        } catch {
            throw ExitStatus.fail(error.description, status: ExitStatus.of(error))
        }
        if let versions {
            try await printVersions(of: versions, in: directory)
            return
        }
        // Read the status a run writes, rather than probe its lock: a probe could make a run that
        // starts at that instant think another holds the directory.
        if let status = RunStatus.read(in: directory), kill(status.pid, 0) == 0 || errno == EPERM {
            printRunning(status)
        } else {
            Console.print("no run in progress")
            printPartials(directory)
        }
        for line in await crawlLines(directory) { Console.print(line) }
    }

    /// Each listing's cursor, the files and versions recorded, and the API budget, from the
    /// state database.
    private func crawlLines(_ directory: MirrorDirectory) async -> [String] {
        guard let state = StateDatabase.forReading(in: directory) else { return [] }
        var lines = await StatusLines.crawls(state)
        if let figures = try? await state.versionFigures(), figures.files > 0 {
            var line = "mirrored: \(figures.files) files of \(figures.items) items"
            if figures.itemsWithVersions > 0 {
                line += "; \(figures.itemsWithVersions) items have more than one version (--versions NAME lists them)"
            }
            lines.append(line)
        }
        return lines
    }

    private func printVersions(of name: String, in directory: MirrorDirectory) async throws {
        guard let state = StateDatabase.forReading(in: directory) else {
            throw ExitStatus.fail("\(out) has no state database this mirror can read", status: ExitStatus.noInput)
        }
        let versions: [MirroredFile]
        do {
            guard let item = try await state.item(named: name) else {
                throw ExitStatus.fail("nothing in \(out) is named '\(name)' (a file, a URL or a feed entry)", status: ExitStatus.noInput)
            }
            versions = try await state.versions(of: item)
            Console.print("\(item): \(versions.count == 1 ? "1 version" : "\(versions.count) versions"), oldest first")
        } catch let error as MirrorError {
            throw ExitStatus.fail(error.description, status: ExitStatus.of(error))
        }
        for file in versions {
            var parts = [file.path, MirrorSummary.formatBytes(file.bytes)]
            if let version = file.version { parts.append("version \(version)") }
            if let updated = file.updated { parts.append("updated \(updated)") }
            parts.append("mirrored \(file.mirroredAt)")
            parts.append("checked \(file.checkedAt)")
            if let md5 = file.md5 { parts.append("md5 \(md5)") }
            if let etag = file.etag { parts.append("etag \(etag)") }
            parts.append("from \(file.url)")
            Console.print("  " + parts.joined(separator: "  "))
        }
    }

    private func printRunning(_ status: RunStatus) {
        let started = ISO8601DateFormatter().string(from: status.startedAt)
        Console.print("running: \(status.source), pid \(status.pid), since \(started)")
        Console.print("downloads: \(status.scheduler.summaryLine)")
        for item in status.scheduler.items where item.state != .waiting {
            let percent = item.percent.map { String(format: "%5.1f%%", $0) } ?? "    ?%"
            Console.print("  \(item.state.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0)) \(percent) \(item.isForced ? "forced " : "       ")\(item.url)")
        }
        let waiting = status.scheduler.counts[.waiting] ?? 0
        if waiting > 0 { Console.print("  … and \(waiting) waiting") }
    }

    private func printPartials(_ directory: MirrorDirectory) {
        guard let partials = directory.partialsForReading() else { return }
        let held = partials.heldPartials()
        guard !held.isEmpty else { return }
        Console.print("partial downloads kept for the next run:")
        for (record, length) in held {
            let percent = record.totalLength.flatMap { $0 > 0 ? Double(length) * 100 / Double($0) : nil }
                .map { String(format: "%5.1f%%", $0) } ?? "    ?%"
            Console.print("  \(percent) \(MirrorSummary.formatBytes(length).padding(toLength: 9, withPad: " ", startingAt: 0)) \(record.url)")
        }
    }
}

/// What `mirror status` says of the crawls and the API budget.
enum StatusLines {
    static func crawls(_ state: StateDatabase) async -> [String] {
        var lines: [String] = []
        for source in (try? await state.crawlSources()) ?? [] {
            guard let figures = try? await state.figures(source: source) else { continue }
            lines.append(source + ":")
            lines.append("  " + cursorLine(figures.cursor))
            lines.append("  \(figures.entriesKnown) entries known, \(figures.imagesKnown) images found, "
                + "\(figures.imagesPending) not yet mirrored")
            var albums = "  albums: \(figures.albumsCached) cached, \(figures.albumsPending) to expand"
            if figures.albumsGone > 0 { albums += ", \(figures.albumsGone) gone" }
            lines.append(albums)
        }
        if let budget = try? await state.budget(api: TagCrawler.budgetKey) { lines.append(budgetLine(budget)) }
        return lines
    }

    static func cursorLine(_ cursor: CrawlCursor) -> String {
        let of = cursor.estimatedPages.map { " of about \($0)" } ?? ""
        guard let next = cursor.nextPage else {
            let passes = cursor.pass == 1 ? "1 pass" : "\(cursor.pass) passes"
            let head = cursor.headID.map { ", newest entry \($0)" } ?? ""
            let figures = "(\(passes) complete, \(cursor.pagesRead) pages read in all\(head))"
            if cursor.lastPassWasCut {
                return "listing read to the --pages limit \(figures); a run without --pages reads on "
                    + (cursor.reachedEnd ? "to what the last full pass saw" : "to the end")
            }
            return "listing read to its end \(figures); the next run reads only what is new"
        }
        let head = cursor.headID.map { " (newest entry at the head: \($0))" } ?? ""
        return "pass \(cursor.pass + 1) at page \(next)\(of)\(head); the next run carries on from there"
    }

    static func budgetLine(_ budget: APIBudget) -> String {
        let formatter = ISO8601DateFormatter()
        var parts: [String] = []
        if let remaining = budget.userRemaining {
            var part = "\(remaining)" + (budget.userLimit.map { " of \($0)" } ?? "") + " calls left this hour"
            if let reset = budget.userResetAt {
                part += reset > Date() ? " (refills at \(formatter.string(from: reset)))" : " (refilled since)"
            }
            parts.append(part)
        }
        if let client = budget.clientRemaining { parts.append("\(client) left today for the application") }
        let seen = formatter.string(from: budget.observedAt)
        return "Imgur API budget at the last call (\(seen)): " + (parts.isEmpty ? "unknown" : parts.joined(separator: "; "))
    }
}
