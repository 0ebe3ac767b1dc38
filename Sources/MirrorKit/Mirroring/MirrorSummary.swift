/// What a run did, for the one-line report and the exit status.
package struct MirrorSummary: Sendable {
    /// Files the run set out to have (previews and full-size files).
    package var wanted = 0
    package var downloaded = 0
    var alreadyPresent = 0
    /// Files a `new-file` run asked after and found as the mirror holds them (a 304, or the same bytes).
    var unchanged = 0
    /// Files saved beside an older version of themselves (`new-file` mode).
    var newVersions = 0
    /// Files the mirror had that were gone from the disk, fetched again (unless `--keep-deleted`).
    package var missingFetchedAgain = 0
    /// New releases a feed names that `skip-if-exists` mode left alone, one line each.
    package var skippedReleases: [String] = []
    package var bytesDownloaded: Int64 = 0
    /// Media the host has removed, found so this run; reported, not counted as failures.
    package var removed: [String] = []
    /// Media an earlier run found removed, listed again (a post, a feed relists everything):
    /// counted, not named again.
    package var removedBefore = 0
    /// Albums the API no longer has; reported once, not counted as failures.
    package var removedAlbums: [String] = []
    package var failures: [DownloadError] = []
    /// Files not tried because their host was down or throttling, by host; the next run tries them.
    package var deferredByHost: [String: Int] = [:]
    /// Files not tried because their host was down or throttling.
    package var deferred: Int { deferredByHost.values.reduce(0, +) }
    /// Hosts given up this run, and why (they matter where files were left for them: ``deferred``).
    package var unavailableHosts: [HostHealth.Verdict] = []
    /// Hosts whose names did not resolve this run and never served this mirror: a typo, most
    /// likely, that waiting will not mend.
    package var unresolvableHosts: [String] = []
    /// Parts of the listing that could not be read (an album, an item with a bad id).
    package var problems: [String] = []
    /// The error that ended the listing early, if any.
    package var stoppedBy: RunStopReason?
    /// The run was cancelled (a signal, a deadline) before it finished; partial downloads are kept.
    package var interrupted = false
    /// Files another worker took over while this one was stopped past its lease (a shared mirror):
    /// that worker mirrors them.
    package var handedOver = 0
    /// Where the listing's crawl stands after this run, for tag mirrors.
    package var listing: ListingProgress?
    /// Files found this run that the filters left out.
    package var leftOut = 0
    /// What a dry run would have fetched.
    package var plan = PlanTally()

    package init() {}

    /// Adds `other`'s figures to these: a run's totals over its sources.
    package mutating func addUp(_ other: MirrorSummary) {
        wanted += other.wanted
        addOutcomes(of: other)
        skippedReleases += other.skippedReleases
        removedAlbums += other.removedAlbums
        problems += other.problems
        leftOut += other.leftOut
        unavailableHosts = unavailableHosts.isEmpty ? other.unavailableHosts : unavailableHosts
        unresolvableHosts = unresolvableHosts.isEmpty ? other.unresolvableHosts : unresolvableHosts
        listing = listing ?? other.listing
    }

    /// True when every wanted file is in the mirror and the whole listing was read.
    package var isComplete: Bool {
        failures.isEmpty && problems.isEmpty && stoppedBy == nil && !interrupted && deferred == 0
    }

    /// `12 files: 10 downloaded (1.2 MB), 2 already present, 0 failed`, or `nothing new` when the
    /// run found nothing to fetch.
    /// Leaves the file at `url` for the next run: its host was down or throttling.
    mutating func `defer`(_ url: String) {
        deferredByHost[URLAuthority.of(url), default: 0] += 1
    }

    package var line: String {
        if plan.isDryRun { return dryRunLine }
        if wanted == 0, failures.isEmpty, removed.isEmpty, removedBefore == 0, problems.isEmpty, skippedReleases.isEmpty, !interrupted,
           stoppedOnlyByTheBudget {
            return (["nothing new"] + leftOutPart + (listing.map { [$0.line] } ?? [])).joined(separator: ", ")
        }
        var parts = ["\(wanted) files: \(downloaded) downloaded (\(Self.formatBytes(bytesDownloaded)))"]
        if newVersions > 0 { parts[0] += ", \(newVersions) of them new versions" }
        if missingFetchedAgain > 0 { parts[0] += ", \(missingFetchedAgain) of them missing from the disk and fetched again" }
        parts.append("\(alreadyPresent) already present")
        if unchanged > 0 { parts.append("\(unchanged) unchanged") }
        if !skippedReleases.isEmpty {
            parts.append("\(skippedReleases.count) new release\(skippedReleases.count == 1 ? "" : "s") skipped (skip-if-exists)")
        }
        if removed.count + removedBefore > 0 { parts.append("\(removed.count + removedBefore) removed upstream") }
        if deferred > 0 { parts.append("\(deferred) left for the next run") }
        if handedOver > 0 { parts.append("\(handedOver) taken over by another worker") }
        parts += leftOutPart
        parts.append("\(failures.count) failed")
        if interrupted { parts.append("interrupted (partial downloads kept)") }
        if let listing { parts.append(listing.line) }
        return parts.joined(separator: ", ")
    }

    /// `dry run: 12 files would be fetched (1.2 MB), 3 already present`.
    private var dryRunLine: String {
        var fetched = "dry run: \(plan.files) file\(plan.files == 1 ? "" : "s") would be fetched"
        if plan.files > 0 {
            var sizes: [String] = []
            if plan.files > plan.unsized { sizes.append(Self.formatBytes(plan.bytes)) }
            if plan.unsized > 0 { sizes.append(plan.unsized == plan.files ? "sizes unknown" : "\(plan.unsized) of unknown size") }
            fetched += " (\(sizes.joined(separator: ", ")))"
        }
        if plan.missing > 0 { fetched += ", \(plan.missing) of them missing from the disk" }
        var parts = [fetched, "\(alreadyPresent) already present"]
        if plan.rechecks > 0 { parts.append("\(plan.rechecks) would be asked after again (new-file)") }
        if removed.count + removedBefore > 0 { parts.append("\(removed.count + removedBefore) removed upstream") }
        if deferred > 0 { parts.append("\(deferred) left for the next run") }
        parts += leftOutPart
        if interrupted { parts.append("interrupted") }
        if let listing { parts.append(listing.line) }
        return parts.joined(separator: ", ")
    }

    private var leftOutPart: [String] {
        leftOut == 0 ? [] : ["\(leftOut) left out by the filters"]
    }

    /// The listing stopped because the API budget is spent, or the API limits us: the plan on a
    /// large tag, not a fault (the cursor is saved and a later run carries on).
    package var stoppedByTheBudget: Bool {
        stoppedBy?.listingFailure?.kind == .budget
    }

    /// Nothing stopped the listing, or only the API budget did.
    package var stoppedOnlyByTheBudget: Bool { stoppedBy == nil || stoppedByTheBudget }

    /// `1.2 MB`: decimal units, one decimal.
    package static func formatBytes(_ bytes: Int64) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : CFormat.string("%.1f ", value) + units[unit]
    }
}

/// What a dry run found to fetch.
package struct PlanTally: Sendable {
    /// The run was a dry run: nothing was fetched or written.
    package var isDryRun = false
    package var files = 0
    /// Their bytes, where the listing states them.
    package var bytes: Int64 = 0
    /// Files whose size the listing does not state.
    var unsized = 0
    /// Files the mirror recorded and lost from the disk.
    var missing = 0
    /// Files a `new-file` run would ask after again.
    var rechecks = 0

    mutating func add(_ file: PlannedFile) {
        files += 1
        if let bytes = file.bytes { self.bytes += bytes } else { unsized += 1 }
        if file.missing { missing += 1 }
    }

    mutating func addUp(_ other: PlanTally) {
        isDryRun = isDryRun || other.isDryRun
        files += other.files
        bytes += other.bytes
        unsized += other.unsized
        missing += other.missing
        rechecks += other.rechecks
    }
}

/// Where a crawl stands: for the summary line and `mirror status`.
package struct ListingProgress: Sendable, Equatable {
    /// Pages read this run.
    var pagesRead: Int
    /// The open pass's next page, nil when the last pass is complete.
    package var nextPage: Int?
    package var estimatedPages: Int?

    var line: String {
        let pages = pagesRead == 1 ? "1 page" : "\(pagesRead) pages"
        guard let nextPage else { return "listing read (\(pages) this run)" }
        let of = estimatedPages.map { " of about \($0)" } ?? ""
        return "listing at page \(nextPage)\(of) (\(pages) read this run; the next run carries on)"
    }
}
