import Synchronization

/// Turns Imgur images into the driver's jobs: each image's thumbnail under `preview/` and its
/// full-size file under `full/`, settled together as one group, with its metadata sidecar. Every
/// Imgur source (tag, album, post) submits its images through this.
struct ImageJobs: Sendable {
    let sink: SourceSink
    let urls: MediaURLBuilder
    let groups: ImageCompletion
    /// Images this worker holds claims on, when workers share the mirror.
    let claims: ClaimedImages?
    /// Which images the run takes; the others stay found and unfinished, for a wider filter.
    let filter: MediaFilter

    init(
        sink: SourceSink, urls: MediaURLBuilder, groups: ImageCompletion, claims: ClaimedImages? = nil,
        filter: MediaFilter = MediaFilter()
    ) {
        self.filter = filter
        self.sink = sink
        self.urls = urls
        self.groups = groups
        self.claims = claims
    }

    /// Writes what the API says of `image` (unless `replacing` is false and there is a sidecar
    /// already), with the kinds of file in `removed` said to be gone upstream and, unless the
    /// mirror kept a copy from before, named no more; false when the run must stop.
    @discardableResult
    func describe(_ image: ImgurImage, replacing: Bool, removed: [(kind: String, kept: Bool)] = []) -> Bool {
        guard let sidecars = sink.sidecars, let item = urls.item(for: image) else { return true }
        do throws(MirrorError) {
            let name = ImageSidecar.name(of: image.id)
            let earlier = try sidecars.earlier(name, adding: sink.name)
            var sidecar = ImageSidecar(image, item: item, sources: earlier.sources)
            // What the sidecar said of removals stands (a page read again, a job that found its
            // file held, says nothing of them); this run's removals join them.
            let removed = removed + earlier.removedUpstream.filter { kind in !removed.contains { $0.kind == kind } }
                .map { (kind: $0, kept: earlier.files[$0] != nil) }
            if !removed.isEmpty {
                // The sidecar names no file the mirror does not have.
                for (kind, kept) in removed where !kept { sidecar.files[kind] = nil }
                sidecar.removedUpstream = removed.map(\.kind).sorted()
            }
            try sidecars.write(sidecar, as: name, replacing: replacing)
        } catch where error.stopsTheRun {
            sink.halt(error)
            return false
        } catch {
            sink.report("metadata of \(image.id): \(error)")
        }
        return true
    }

    /// Whether `image` has a sidecar already (a run mirrored it).
    func hasSidecar(_ image: ImgurImage) -> Bool {
        guard let sidecars = sink.sidecars else { return false }
        return (try? sidecars.exists(ImageSidecar.name(of: image.id))) ?? false
    }

    /// Whether the run takes `image` (`--filter`, `--since`, `--until`).
    func admits(_ image: ImgurImage) -> Bool {
        filter.admits(MediaFilter.Candidate(
            kind: image.animated ? .animated : .image, bytes: urls.item(for: image)?.expectedSize, date: image.postDate))
    }

    /// Mirrors what of `found` the filters admit; `resumed`: found by an earlier run, as the API
    /// described them then.
    func submit(_ found: [ImgurImage], resumed: Bool) async {
        var unusable: [String] = []
        let shared = claims != nil
        for image in found {
            guard let item = urls.item(for: image) else {
                sink.report("skipped image with unusable id '\(image.id)'")
                unusable.append(image.id)
                continue
            }
            guard admits(image) else {
                // Counted once, when found: an earlier run's finds are weighed again every run.
                if !resumed { sink.leaveOut(item.previewURL == nil ? 1 : 2) }
                continue
            }
            let fileURLs = [item.previewURL, item.fullURL].compactMap { $0 }
            var fence: CommitFence?
            if let claims {
                // A claim another worker took before its jobs began (this one was stopped meanwhile).
                guard let held = claims.insert(image.id, urls: fileURLs), !held.isLost else { continue }
                fence = held
                // Lost once, claimed again since: this worker's to touch again.
                sink.runner.leases?.reclaimed(fileURLs)
            }
            guard describe(image, replacing: !resumed) else { break }
            groups.expect(item.id, files: item.previewURL == nil ? 1 : 2)
            let groups = groups
            // Alone, thumbnails wait while full-size files take the bandwidth. Shared, they do
            // not: a thumbnail held behind this worker's large file would strand its claim (and,
            // were the worker killed, be asked for again by another), while the other workers'
            // connections are what a CDN's per-connection limit rewards.
            // Gone upstream: the sidecar says so, rather than name a file the mirror lacks.
            let (jobs, gone) = (self, RemovedKinds())
            let settle = { @Sendable (kind: String, outcome: JobRunner.Outcome) async in
                if case .removed(_, _, let kept) = outcome {
                    gone.adding(kind, kept: kept) { jobs.describe(image, replacing: true, removed: $0) }
                }
                await groups.settle(item.id, outcome)
            }
            if let previewURL = item.previewURL, let previewName = item.previewFileName {
                var preview = MirrorJob(url: previewURL, relativePath: "preview/\(previewName)", expectedSize: nil)
                preview.fence = fence
                await sink.submit(preview, forced: shared, then: { await settle("preview", $0) })
            }
            var full = MirrorJob(url: item.fullURL, relativePath: "full/\(item.fullFileName)", expectedSize: item.expectedSize)
            full.fence = fence
            await sink.submit(full, forced: true, then: { await settle("full", $0) })
        }
        // An id that makes no safe file name will not make one next run either.
        guard !unusable.isEmpty else { return }
        unusable.forEach { claims?.remove($0) }
        do throws(MirrorError) {
            try await sink.store.markImagesDone(unusable)
        } catch {
            sink.halt(error)
        }
    }
}

/// The kinds of an image's files (`full`, `preview`) its host has removed, as their jobs end.
private final class RemovedKinds: Sendable {
    /// Each kind, and whether the mirror kept a copy from before.
    private let kinds = Mutex<[String: Bool]>([:])

    /// Adds `kind` and hands `write` all of them so far, under the lock: the sidecar written
    /// last is the one that knows the most.
    func adding(_ kind: String, kept: Bool, then write: ([(kind: String, kept: Bool)]) -> Void) {
        kinds.withLock { kinds in
            kinds[kind] = kept
            write(kinds.map { (kind: $0.key, kept: $0.value) })
        }
    }
}
