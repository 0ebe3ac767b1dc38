import ArgumentParser
import FoundationEssentials
import Glibc
import Logging
import MirrorKit

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show what a mirror directory's run is doing, where its crawls stand, the API budget, and the partial downloads it keeps.")

    @Argument(help: ArgumentHelp("The mirror directory (or give it as --out).", valueName: "dir"))
    var directory: String?

    @Option(name: [.customShort("o"), .customLong("out")], help: ArgumentHelp("The mirror directory.", valueName: "dir"))
    var outOption: String?

    /// The directory named, as an argument or as `--out`.
    private var out: String { directory ?? outOption ?? "" }

    func validate() throws {
        switch (directory, outOption) {
        case (nil, nil): throw ValidationError("name the mirror directory: mirror status DIR")
        case (_?, _?): throw ValidationError("name the mirror directory once: as an argument or as --out, not both")
        default: try validateDirectory(out, option: directory == nil ? "--out" : "the directory")
        }
    }

    @Option(help: ArgumentHelp(
        "List the versions the mirror holds of one item, named by a file (its path in the mirror, or its name), a URL, or a feed entry.",
        valueName: "name"))
    var versions: String?

    @Flag(help: "Print the status as one JSON object, for scripts.")
    var json = false

    @Option(help: ArgumentHelp(
        "The PostgreSQL state the mirror's workers share (as their --state): shows the workers, their claims and rates.",
        valueName: "url"))
    var state: String?

    @Option(help: ArgumentHelp(
        "With --state: the budget group whose API budget to show, as the workers' --budget-group (default: this host's name).",
        valueName: "name"))
    var budgetGroup: String?

    func run() async throws {
        // Before anything is read here: `mirror` hands a shared state over to mirror-postgresql.
        let shared = try state.map { text in
            let location: PostgresLocation
            do throws(MirrorError) {
                location = try PostgresLocation(text)
            } catch {
                throw ExitStatus.fail(error.description, status: ExitStatus.of(error))
            }
            return (location, try SharedStateAccess.connector(for: location))
        }
        let root = URL(fileURLWithPath: out)
        var info = stat()
        guard stat(root.appendingPathComponent(".mirror").path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw ExitStatus.fail("\(out) is not a mirror directory (no .mirror inside)", status: ExitStatus.noInput)
        }
        // Looking changes nothing: status makes no folder, and reads a mirror another user runs.
        let directory: MirrorDirectory
        do {
            directory = try MirrorDirectory.inspecting(root: root)
        } catch {
            throw ExitStatus.fail(error.description, status: ExitStatus.of(error))
        }
        let report: StatusReport
        if let shared {
            guard let sharedReport = try await sharedReport(shared.0, connector: shared.1, in: directory) else { return }
            report = sharedReport
        } else {
            if let versions {
                try await printVersions(of: versions, in: directory)
                return
            }
            // Read the status a run writes, rather than probe its lock: a probe could make a run that
            // starts at that instant think another holds the directory.
            report = await StatusReport.gather(in: directory) { kill($0, 0) == 0 || errno == EPERM }
        }
        if json {
            Console.printJSON(report.json())
            return
        }
        for line in StatusLines.report(report) { Console.print(line) }
    }

    /// The report of a shared state: the workers, and the records in PostgreSQL; nil once
    /// `--versions` has printed what it asks for.
    private func sharedReport(
        _ location: PostgresLocation, connector: any SharedDatabaseConnector, in directory: MirrorDirectory
    ) async throws -> StatusReport? {
        do {
            let shared = try await connector.open(
                location, leaseDuration: .seconds(30), budgetGroup: budgetGroup, readOnly: true,
                logger: Logger(label: "mirror.status", factory: { _ in SwiftLogNoOpLogHandler() }))
            let report: Result<StatusReport?, any Error>
            do {
                if let versions {
                    try await printVersions(of: versions, in: shared.state)
                    report = .success(nil)
                } else {
                    report = .success(try await StatusReport.gather(in: directory, shared: shared))
                }
            } catch {
                report = .failure(error)
            }
            await shared.close()
            return try report.get()
        } catch let error as MirrorError {
            throw ExitStatus.fail(error.description, status: ExitStatus.of(error))
        }
    }

    private func printVersions(of name: String, in directory: MirrorDirectory) async throws {
        guard let state = StateDatabase.forReading(in: directory) else {
            throw ExitStatus.fail("\(out) has no state database this mirror can read", status: ExitStatus.noInput)
        }
        // Versions are kept from schema 3 on.
        guard state.schemaVersion >= 3 else {
            throw ExitStatus.fail(
                "\(out)'s state database is from a mirror before versions (schema \(state.schemaVersion)); the next run upgrades it",
                status: ExitStatus.noInput)
        }
        try await printVersions(of: name, in: state)
    }

    private func printVersions(of name: String, in state: any MirrorState) async throws {
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

}

/// What `mirror status` says, line by line.
enum StatusLines {
    static func report(_ report: StatusReport) -> [String] {
        var lines: [String] = []
        if let workers = report.workers { lines += self.workers(workers) }
        if let running = report.running {
            lines += self.running(running)
        } else {
            lines.append("no run in progress")
            for last in report.lastRuns { lines += lastRun(last) }
            if !report.partials.isEmpty {
                lines.append("partial downloads kept for the next run:")
                for partial in report.partials {
                    let percent = partial.totalBytes.flatMap { $0 > 0 ? Double(partial.bytes) * 100 / Double($0) : nil }
                        .map { CFormat.string("%5.1f%%", $0) } ?? "    ?%"
                    lines.append("  \(percent) \(padded(MirrorSummary.formatBytes(partial.bytes), to: 9)) \(partial.url)")
                }
            }
        }
        for crawl in report.crawls {
            let figures = crawl.figures
            lines.append(crawl.source + ":")
            lines.append("  " + cursorLine(figures.cursor))
            lines.append("  \(figures.entriesKnown) entries known, \(figures.imagesKnown) images found, "
                + "\(figures.imagesPending) not yet mirrored")
            var albums = "  albums: \(figures.albumsCached) cached, \(figures.albumsPending) to expand"
            if figures.albumsGone > 0 { albums += ", \(figures.albumsGone) gone" }
            lines.append(albums)
        }
        if let budget = report.budget { lines.append(budgetLine(budget)) }
        if let schema = report.olderSchema {
            lines.append("the state database is at schema \(schema), from an older mirror; the next run upgrades it (the runs it kept are shown from then on)")
        }
        if let figures = report.files, figures.files > 0 {
            let missing = figures.missing ?? 0
            var line = "mirrored: \(figures.files - missing) files of \(figures.items) items"
            if figures.itemsWithVersions > 0 {
                line += "; \(figures.itemsWithVersions) items have more than one version (--versions NAME lists them)"
            }
            lines.append(line)
            if missing > 0 {
                lines.append("  \(missing) recorded \(missing == 1 ? "file is" : "files are") missing from the disk: the next run fetches them again (unless --keep-deleted)")
            }
        }
        return lines
    }

    /// The workers of a shared state: live ones with what they hold and how fast they go.
    static func workers(_ workers: [WorkerStatus]) -> [String] {
        let formatter = Date.ISO8601FormatStyle()
        let live = workers.filter(\.live)
        var lines = [live.isEmpty ? "no worker running" : "workers running: \(live.count)"]
        for worker in workers {
            var state: String
            if worker.live {
                state = "live, heartbeat \(formatter.format(worker.heartbeatAt))"
            } else if let ended = worker.endedAt {
                state = "ended \(formatter.format(ended))" + (worker.exitStatus.map { ", exit status \($0)" } ?? "")
            } else {
                state = "gone: no heartbeat since \(formatter.format(worker.heartbeatAt)); its claims pass to other workers"
            }
            lines.append("  \(worker.id) (\(worker.source)): \(state)")
            lines.append("    \(worker.claims) images claimed, \(worker.filesDone) files settled, "
                + "\(MirrorSummary.formatBytes(worker.bytes)) received, \(MirrorSummary.formatBytes(Int64(worker.bytesPerSecond)))/s")
        }
        return lines
    }

    static func running(_ status: RunStatus) -> [String] {
        let started = status.startedAt.formatted(.iso8601)
        var lines = ["running: \(status.source), pid \(status.pid), since \(started)"]
        let progress = status.progress
        var phase = "phase: \(progress.phase.rawValue)"
        if progress.phase == .crawling, let crawl = progress.crawl {
            phase += ", page \(crawl.page)" + (crawl.estimatedPages.map { " of about \($0)" } ?? "")
                + ", \(crawl.pagesRead) pages read this run"
            if let left = crawl.apiCallsLeft { phase += ", \(left) API calls left" }
        }
        lines.append(phase)
        lines.append("files: \(progress.filesDone) of \(progress.filesKnown)\(progress.allFilesKnown ? "" : " found so far") settled, "
            + "\(progress.filesDownloaded) downloaded (\(MirrorSummary.formatBytes(progress.bytesReceived))), \(progress.filesFailed) failed")
        guard let scheduler = progress.scheduler else { return lines }
        lines.append("downloads: \(scheduler.summaryLine.isEmpty ? "none under way" : scheduler.summaryLine)")
        for item in scheduler.items where item.state != .waiting {
            let percent = item.percent.map { CFormat.string("%5.1f%%", $0) } ?? "    ?%"
            lines.append("  \(padded(item.state.rawValue, to: 11)) \(percent) \(item.isForced ? "forced " : "       ")\(item.url)")
        }
        let waiting = scheduler.counts[.waiting] ?? 0
        if waiting > 0 { lines.append("  … and \(waiting) waiting") }
        return lines
    }

    static func lastRun(_ run: RunRecord) -> [String] {
        let formatter = Date.ISO8601FormatStyle()
        var lines = [
            "last run: \(run.source), \(formatter.format(run.startedAt)) to \(formatter.format(run.endedAt)), "
                + "exit status \(run.exitStatus)",
            "  \(run.line)",
        ]
        if let stopped = run.stoppedBy { lines.append("  stopped by: \(stopped)") }
        if !run.failures.isEmpty {
            let more = run.filesFailed > run.failures.count ? " (the first \(run.failures.count))" : ""
            lines.append("  failed, to be tried again by the next run\(more):")
            lines += run.failures.map { "    \($0.problem)" }
        }
        if run.filesDeferred > 0 { lines.append("  \(run.filesDeferred) files left for the next run (their host was down or throttling)") }
        if let removed = run.removed, !removed.isEmpty {
            let more = run.filesRemoved > removed.count ? " (the first \(removed.count))" : ""
            lines.append("  removed upstream, not asked for again\(more):")
            lines += removed.map { "    \($0)" }
        }
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
        let formatter = Date.ISO8601FormatStyle()
        var parts: [String] = []
        if let remaining = budget.userRemaining {
            var part = "\(remaining)" + (budget.userLimit.map { " of \($0)" } ?? "") + " calls left this hour"
            if let reset = budget.userResetAt {
                part += reset > Date() ? " (refills at \(formatter.format(reset)))" : " (refilled since)"
            }
            parts.append(part)
        }
        if let client = budget.clientRemaining { parts.append("\(client) left today for the application") }
        let seen = formatter.format(budget.observedAt)
        return "Imgur API budget at the last call (\(seen)): " + (parts.isEmpty ? "unknown" : parts.joined(separator: "; "))
    }
}

/// `text` followed by spaces up to `width` characters, for columns.
private func padded(_ text: String, to width: Int) -> String {
    text + String(repeating: " ", count: max(0, width - text.count))
}
