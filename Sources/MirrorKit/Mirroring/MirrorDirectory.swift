import FoundationEssentials
import Glibc
import Synchronization

/// What a run does about a file the mirror has already (the design's `DownloadMode`).
package enum DownloadMode: String, Sendable, CaseIterable, Codable {
    /// Ask the server again every run (a conditional GET) and keep each new version beside the
    /// old ones, as `name(1).ext`, `name(2).ext`, …; the same bytes are never saved twice.
    case newFile = "new-file"
    /// Keep the file there; nothing is fetched for an item the mirror has, or a name that exists.
    case skipIfExists = "skip-if-exists"

    /// The mode spelled either way: kebab-case (`new-file`) or as the design names it (`newFile`).
    package init?(spelling: String) {
        if let mode = Self(rawValue: spelling) ?? Self.allCases.first(where: { $0.designName == spelling }) {
            self = mode
        } else {
            return nil
        }
    }

    /// The name the design gives the mode: `newFile`, `skipIfExists`.
    var designName: String {
        switch self {
        case .newFile: "newFile"
        case .skipIfExists: "skipIfExists"
        }
    }

    /// Every accepted spelling.
    package static var spellings: [String] { allCases.flatMap { [$0.rawValue, $0.designName] } }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let mode = Self(spelling: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(text)' is not a mode; use one of \(Self.spellings.joined(separator: ", "))")
        }
        self = mode
    }
}

/// The mirror's output directory: finished files under their final names, and mirror's own
/// working state under `.mirror/`.
///
/// Every folder and file inside is reached through ``Directory``: relative to a held descriptor,
/// never through a link, in folders the user owns and nobody else may write to. So a link or
/// folder planted by another user (the directory may sit on shared storage or in /tmp) is
/// refused with its path and the reason, never written through.
///
/// A file appears under its final name only once complete: its data is synced to disk, then it is
/// renamed into place in one step with `renameat2(RENAME_NOREPLACE)`, which fails rather than
/// replace an existing file, so a concurrent writer or an earlier run's file is never overwritten
/// and no moment exists where one inode has two names. The directories that gained names are
/// synced in batches (``syncDirectories()``): a power cut may lose a name given just before it,
/// never a file's contents, and the next run fetches what it finds missing.
package struct MirrorDirectory: Sendable {
    let root: URL
    /// `root`'s path, kept as a string: building URLs cost more than a download's other work.
    private let rootPath: String
    let rootFolder: Directory
    /// `.mirror/`: partial downloads, the state database, the run lock.
    let stateFolder: Directory
    private let bookkeeping = Bookkeeping()

    /// Folders opened so far, by relative path, and folders with names not yet synced.
    private final class Bookkeeping: Sendable {
        struct State {
            var folders: [String: Directory] = [:]
            var unsynced: [String: Directory] = [:]
            var commitsSinceSync = 0
        }

        let state = Mutex(State())
    }

    /// Commits between two syncs of the directories they touched.
    static let commitsPerDirectorySync = 128

    /// Where mirror keeps partial downloads, the state database and the run lock.
    var stateDirectory: URL { root.appendingPathComponent(".mirror", isDirectory: true) }

    /// Opens (making it if needed) the mirror at `root` and its `.mirror` folder; throws when
    /// `.mirror` is a link, not the user's, or writable by others.
    package init(root: URL) throws(MirrorError) {
        let root = root.standardizedFileURL
        do throws(FileSystemError) {
            let rootFolder = try Directory.open(creating: root.path)
            try rootFolder.checkNamesAreSafe()
            let stateFolder = try rootFolder.folder(".mirror")
            // It holds the sources' URLs and the crawl: the user's alone, whatever the umask.
            guard fchmod(stateFolder.descriptor, 0o700) == 0 else { throw FileSystemError.last(path: stateFolder.path) }
            self.init(root: root, rootFolder: rootFolder, stateFolder: stateFolder)
        } catch {
            throw .fileSystem(error)
        }
    }

    /// Opens the existing mirror at `root` to be looked at, not written: nothing is made, and a
    /// mirror another user owns (a cron job's, say) may be read. `.mirror` must still be a folder,
    /// not a link.
    package static func inspecting(root: URL) throws(MirrorError) -> MirrorDirectory {
        let root = root.standardizedFileURL
        do {
            let rootFolder = try Directory.open(existing: root.path)
            return MirrorDirectory(root: root, rootFolder: rootFolder, stateFolder: try rootFolder.folderForReading(".mirror"))
        } catch {
            throw .fileSystem(error)
        }
    }

    init(root: URL, rootFolder: Directory, stateFolder: Directory) {
        self.root = root
        rootPath = root.path == "/" ? "" : root.path
        self.rootFolder = rootFolder
        self.stateFolder = stateFolder
    }

    /// The partial downloads in `.mirror/partials`, to be listed: nil when there is no such
    /// folder. Nothing is made or tidied.
    func partialsForReading() -> PartialStore? {
        guard let folder = try? stateFolder.folderForReading("partials") else { return nil }
        return PartialStore(inspecting: folder)
    }

    /// The store of partial downloads, in `.mirror/partials`.
    func partialStore() throws(MirrorError) -> PartialStore {
        do {
            return PartialStore(folder: try stateFolder.folder("partials"))
        } catch {
            throw .fileSystem(error)
        }
    }

    /// The absolute path of `relativePath`, which must be a plain relative path (no `..`, no
    /// leading `/`): nothing is ever written outside the mirror directory.
    func path(of relativePath: String) throws(MirrorError) -> URL {
        URL(fileURLWithPath: try absolutePath(of: relativePath))
    }

    /// ``path(of:)`` as a string.
    func absolutePath(of relativePath: String) throws(MirrorError) -> String {
        try split(relativePath)
        return rootPath + "/" + relativePath
    }

    /// `relativePath`'s folder part and file name, once it is known to be a plain relative path:
    /// no empty, `.` or `..` component, no NUL, not inside `.mirror`.
    @discardableResult
    private func split(_ relativePath: String) throws(MirrorError) -> (folder: Substring, name: String) {
        // Over the bytes, a component at a time, each checked as any name in a folder is
        // (``Directory/isPlainName(_:)``), nothing allocated but the name: it is asked for every
        // file of every run, and a sweep's 10,000 files spent a fifth of an unchanged rerun
        // splitting their paths into arrays of components (see BENCHMARKS.md).
        let lastSlash = relativePath.withUTF8Bytes { bytes -> Int?? in
            var start = 0
            var lastSlash: Int?
            for end in 0...bytes.count where end == bytes.count || bytes[end] == UInt8(ascii: "/") {
                let component = UnsafeBufferPointer(rebasing: bytes[start..<end])
                guard Directory.isPlainName(component), start > 0 || !component.elementsEqual(".mirror".utf8) else { return nil }
                if end < bytes.count { lastSlash = end }
                start = end + 1
            }
            return .some(lastSlash)
        }
        guard let lastSlash else { throw MirrorError.unsafePath(relativePath) }
        guard let lastSlash else { return ("", relativePath) }
        let slash = relativePath.utf8.index(relativePath.startIndex, offsetBy: lastSlash)
        return (relativePath[..<slash], String(relativePath[relativePath.utf8.index(after: slash)...]))
    }

    /// The folder at `relativePath` inside the mirror, opened once per run; nil when it is
    /// missing and `create` is false.
    private func folder(_ relativePath: Substring, create: Bool) throws(MirrorError) -> Directory? {
        if relativePath.isEmpty { return rootFolder }
        let key = String(relativePath)
        if let folder = bookkeeping.state.withLock({ $0.folders[key] }) { return folder }
        let folder: Directory
        do {
            folder = try rootFolder.folder(atRelativePath: relativePath, create: create)
        } catch where !create && error.errno == ENOENT {
            return nil
        } catch {
            throw .fileSystem(error)
        }
        bookkeeping.state.withLock { $0.folders[key] = folder }
        return folder
    }

    /// Replaces the small file at `relativePath` (a sidecar) with `bytes` in one step, unless it
    /// holds them already (or, unless `replacing`, exists and is not empty); true when it was written. Its folders
    /// are made as needed, each checked as every folder of the mirror is: a link planted among
    /// them is refused, not followed.
    func replaceSmallFile(_ relativePath: String, with bytes: [UInt8], replacing: Bool = true) throws(MirrorError) -> Bool {
        let (folderPath, name) = try split(relativePath)
        guard let folder = try folder(folderPath, create: true) else { return false }
        if let info = folder.status(of: name) {
            if let problem = Directory.problem(withFile: info) {
                throw .fileSystem(FileSystemError(path: folder.path(of: name), problem: problem))
            }
            // Empty, or zeros (XFS), is what a power cut leaves of one renamed into place before
            // its write-back (sidecars are not synced), never what was written: not one to keep.
            if !replacing, info.st_size > 0, folder.contents(of: name)?.first != 0 { return false }
        }
        if folder.contents(of: name, limit: bytes.count) == bytes { return false }
        do {
            try folder.replaceContents(of: name, with: bytes, durable: false)
        } catch {
            throw .fileSystem(error)
        }
        return true
    }

    /// The bytes of the small regular file `relativePath` (at most `limit`), if there is one.
    func smallFileContents(_ relativePath: String, limit: Int = 1 << 20) throws(MirrorError) -> [UInt8]? {
        let (folderPath, name) = try split(relativePath)
        guard let folder = try folder(folderPath, create: false), let info = folder.status(of: name),
              Directory.problem(withFile: info) == nil
        else { return nil }
        return folder.contents(of: name, limit: limit)
    }

    /// Whether anything has the name `relativePath` (a link counts: the name is taken).
    func fileExists(_ relativePath: String) throws(MirrorError) -> Bool {
        let (folderPath, name) = try split(relativePath)
        return try folder(folderPath, create: false)?.contains(name) ?? false
    }

    /// The modification time of the mirrored file `relativePath` (a regular file), if it has one.
    func modificationDate(of relativePath: String) throws(MirrorError) -> Date? {
        let (folderPath, name) = try split(relativePath)
        guard let info = try folder(folderPath, create: false)?.status(of: name), info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec))
    }

    /// What holds a name the state has no file for: its size when it is a regular file, and the
    /// download record it still carries when it was named and not yet recorded (a kill came
    /// between the two). Nil when nothing has the name. One look serves both questions a job asks
    /// of a name it has no record of.
    func occupant(of relativePath: String) throws(MirrorError) -> (size: Int64?, record: CommitRecord?)? {
        let (folderPath, name) = try split(relativePath)
        guard let folder = try folder(folderPath, create: false), let info = folder.status(of: name) else { return nil }
        guard info.st_mode & S_IFMT == S_IFREG else { return (nil, nil) }
        let record = folder.attribute(PartialStore.attribute, of: name, limit: PartialStore.largestAttribute)
            .flatMap(CommitRecord.init(stored:))
        return (Int64(info.st_size), record)
    }

    /// The MD5 of the mirrored file `relativePath`; nil when there is none (or it cannot be read).
    func md5(of relativePath: String) throws(MirrorError) -> String? {
        let (folderPath, name) = try split(relativePath)
        guard let folder = try folder(folderPath, create: false), let fd = try? folder.openFile(name, .read) else { return nil }
        defer { close(fd) }
        do throws(DigestError) {
            return try Digest.md5Hex(ofFile: fd)
        } catch {
            throw .digest(error.description)
        }
    }

    /// Moves the finished download `partName` of `partials` into place under `relativePath` and
    /// returns the name it got.
    ///
    /// - Returns: nil when `mode` is ``DownloadMode/skipIfExists`` and the name was taken; the
    ///   download is then discarded.
    ///
    /// `afterRename` gets the folder and file name the file has under its final name, and
    /// whether it was copied there from another file system (a descriptor open on the download
    /// is then not the named file's).
    func commit(
        _ partName: String, from partials: Directory, as relativePath: String, mode: DownloadMode,
        afterRename: (Directory, String, _ copied: Bool) -> Void = { _, _, _ in }
    ) throws(MirrorError) -> String? {
        _ = try synced(partName, in: partials)
        return try name(partName, from: partials, as: relativePath, mode: mode, afterRename: afterRename)
    }

    /// The first half of a commit: the finished download `partName`, opened and its data synced,
    /// so that the name it gets next is never a name for bytes not yet on disk. A download whose
    /// sync fails is deleted: see the comment below. (`sync` is `fdatasync`, but in tests.)
    func synced(
        _ partName: String, in partials: Directory, beforeSync: (Int32) -> Void = { _ in },
        sync: (Int32) -> Int32 = { fdatasync($0) }
    ) throws(MirrorError) -> OpenFile {
        do throws(FileSystemError) {
            let file = OpenFile(try partials.openFile(partName, .read))
            beforeSync(file.descriptor)
            guard sync(file.descriptor) == 0 else {
                let failure = FileSystemError.last(path: partials.path(of: partName))
                // The disk may not hold these bytes (a write-back that failed), and the kernel
                // says so once: the next run's sync would succeed, and the partial, as long as
                // its record says, would be named as it is. Fetched again instead, whatever the
                // error the file system kept (NFS and FUSE pass on their own). Only one that cannot
                // sync at all (EINVAL, ENOTSUP, ENOSYS) lost nothing: the partial stays.
                if failure.errno.map({ ![EINVAL, ENOTSUP, ENOSYS].contains($0) }) ?? true { partials.remove(partName) }
                throw failure
            }
            return file
        } catch {
            throw .fileSystem(error)
        }
    }

    /// The second half of a commit: moves the synced download `partName` into place under
    /// `relativePath` and returns the name it got; nil when `mode` is
    /// ``DownloadMode/skipIfExists`` and the name was taken (the download is then discarded).
    /// `afterRename` as in ``commit(_:from:as:mode:afterRename:)``.
    func name(
        _ partName: String, from partials: Directory, as relativePath: String, mode: DownloadMode,
        afterRename: (Directory, String, _ copied: Bool) -> Void = { _, _, _ in }
    ) throws(MirrorError) -> String? {
        let (folderPath, name) = try split(relativePath)
        var target = try folder(folderPath, create: true)!
        // In new-file mode the names run on, name(1), name(2)…, to the first one free.
        let candidates = (0...).lazy.map { $0 == 0 ? name : Self.numbered(name, $0) }.prefix(mode == .skipIfExists ? 1 : Int.max)
        var recreated = false
        while true {
            let moved: (name: String, copied: Bool)?
            do {
                moved = try partials.move(partName, to: target, firstFreeOf: candidates)
            } catch where error.errno == ENOENT && !recreated && partials.contains(partName) {
                // The folder went away since this run opened it: make it again, once.
                recreated = true
                _ = bookkeeping.state.withLock { $0.folders.removeValue(forKey: String(folderPath)) }
                target = try folder(folderPath, create: true)!
                continue
            } catch {
                throw .fileSystem(error)
            }
            guard let (taken, copied) = moved else {
                partials.remove(partName)
                return nil
            }
            noteNewName(in: target, key: String(folderPath))
            afterRename(target, taken, copied)
            return folderPath.isEmpty ? taken : folderPath + "/" + taken
        }
    }

    /// Moves the file just committed as `relativePath` back to `partName` in `partials`: what
    /// vouches for it (the state database) could not be written, and a file nobody records would
    /// be fetched again under a second name. It stays a complete partial for the next run.
    func uncommit(_ relativePath: String, backTo partials: Directory, as partName: String) throws(MirrorError) {
        let (folderPath, name) = try split(relativePath)
        guard let folder = try folder(folderPath, create: false) else {
            throw .fileSystem(FileSystemError(path: try absolutePath(of: relativePath), errno: ENOENT))
        }
        do throws(FileSystemError) {
            guard try folder.move(name, to: partials, as: partName) else {
                // Another download of the URL holds the name: the caller says the file is unrecorded.
                throw FileSystemError(path: partials.path(of: partName), errno: EEXIST)
            }
        } catch {
            throw .fileSystem(error)
        }
    }

    /// Takes the extended attribute `attribute` off the mirrored file `relativePath`; true when
    /// this call took it off.
    @discardableResult
    func removeAttribute(_ attribute: String, of relativePath: String) -> Bool {
        guard let (folderPath, name) = try? split(relativePath), let folder = try? folder(folderPath, create: false) else { return false }
        return folder.removeAttribute(attribute, of: name)
    }

    /// Syncs every directory that gained a name since the last sync. Those it could not sync stay
    /// due, for the next call.
    func syncDirectories() throws(MirrorError) {
        var folders = bookkeeping.state.withLock { state in
            defer {
                state.unsynced = [:]
                state.commitsSinceSync = 0
            }
            return state.unsynced
        }
        while let (key, folder) = folders.first {
            do {
                try folder.sync()
                folders.removeValue(forKey: key)
            } catch {
                bookkeeping.state.withLock { $0.unsynced.merge(folders) { current, _ in current } }
                throw .fileSystem(error)
            }
        }
    }

    /// Counts a new name; every so many, syncs the directories. A sync that fails here is not
    /// this file's failure: the directories stay due, and the sync at the session's end reports it.
    private func noteNewName(in folder: Directory, key: String) {
        let due = bookkeeping.state.withLock { state in
            state.unsynced[key] = folder
            state.commitsSinceSync += 1
            return state.commitsSinceSync >= Self.commitsPerDirectorySync
        }
        if due { try? syncDirectories() }
    }

    /// Sets a mirrored file's modification time (best effort: a failure changes nothing else).
    func setModificationDate(_ date: Date, of relativePath: String) {
        guard let (folderPath, name) = try? split(relativePath),
              let folder = try? folder(folderPath, create: false)
        else { return }
        folder.setModificationDate(date, of: name)
    }

    /// `dir/name.ext` → `dir/name(n).ext`.
    static func numbered(_ relativePath: String, _ number: Int) -> String {
        insert("(\(number))", beforeExtensionOf: relativePath)
    }

    /// Where `path` stands among the names new versions of `relativePath` take (see
    /// ``numbered(_:_:)``): 0 for the name itself, n for `name(n).ext`, nil for another name.
    static func versionNumber(of path: String, among relativePath: String) -> Int? {
        if path == relativePath { return 0 }
        // Any "(n)" in the name may be the one `numbered` put in (what it takes for the extension
        // may hold parentheses too): each is tried, from the last.
        var end = path.endIndex
        while let close = path[..<end].lastIndex(of: ")") {
            end = close
            guard let open = path[..<close].lastIndex(of: "("),
                  let number = Int(path[path.index(after: open)..<close]), number > 0
            else { continue }
            if numbered(relativePath, number) == path { return number }
        }
        return nil
    }

    /// The name new versions of an item are named after: from its newest version's path up
    /// through the item's `paths` it is a version of (`name(1)(1).ext` → `name(1).ext` →
    /// `name.ext`), to one that is a version of none not yet passed. A version made the newest
    /// again is recorded anew, after the others: the walk does not go by that order. A name the
    /// item never had is not made up: an item whose plain name was another's (its files
    /// `name(1).ext`, `name(2).ext`) goes on from its newest, `name(2)(1).ext`, where its
    /// listing would take `name(3).ext`.
    static func baseName(of newest: String, among paths: [String]) -> String {
        var base = newest
        var seen: Set<String> = [newest]
        while let parent = paths.first(where: { !seen.contains($0) && (versionNumber(of: base, among: $0) ?? 0) > 0 }) {
            seen.insert(parent)
            base = parent
        }
        return base
    }

    /// `name.ext` → `name-tag.ext`.
    static func tagged(_ name: String, _ tag: some StringProtocol) -> String {
        insert("-\(tag)", beforeExtensionOf: name)
    }

    /// Inserts `text` before the extension of the last component, cutting the name before it as
    /// far as needed to keep the component within NAME_MAX: `(12)` must not turn a name that fits
    /// into one that fails with ENAMETOOLONG on every run.
    private static func insert(_ text: String, beforeExtensionOf relativePath: String) -> String {
        let slash = relativePath.lastIndex(of: "/").map { relativePath.index(after: $0) } ?? relativePath.startIndex
        var (stem, suffix) = FileNameText.splitExtension(relativePath[slash...])
        let room = FileNameText.maximumBytes - text.utf8.count
        if stem.utf8.count + suffix.utf8.count > room {
            // A long extension is cut with the rest of the name, as FileNameText.truncated does.
            if suffix.utf8.count > FileNameText.maximumExtensionBytes {
                stem = relativePath[slash...]
                suffix = relativePath[relativePath.endIndex...]
            }
            return relativePath[..<slash] + FileNameText.prefix(of: stem, bytes: room - suffix.utf8.count) + text + suffix
        }
        return relativePath[..<slash] + stem + text + suffix
    }
}
