import CMirrorSystem
import Foundation
import Synchronization

/// How a finished download is named when its file name is already taken.
public enum DownloadMode: String, Sendable, CaseIterable, Codable {
    /// Never overwrite: save as `name(1).ext`, `name(2).ext`, … (browser-like).
    case newFile = "new-file"
    /// Keep the file already there and drop the download; nothing is fetched for a name that exists.
    case skipIfExists = "skip-if-exists"
}

/// The mirror's output directory: finished files under their final names, and mirror's own
/// working state under `.mirror/`.
///
/// A file appears under its final name only once complete: its data is synced to disk, then it is
/// renamed into place in one step with `renameat2(RENAME_NOREPLACE)`, which fails rather than
/// replace an existing file, so a concurrent writer or an earlier run's file is never overwritten
/// and no moment exists where one inode has two names. The directories that gained names are
/// synced in batches (``syncDirectories()``): a power cut may lose a name given just before it,
/// never a file's contents, and the next run fetches what it finds missing.
public struct MirrorDirectory: Sendable {
    public let root: URL
    /// `root`'s path, kept as a string: building URLs cost more than a download's other work.
    private let rootPath: String
    private let bookkeeping = Bookkeeping()

    /// Directories known to exist, and directories with names not yet synced.
    private final class Bookkeeping: Sendable {
        struct State {
            var created: Set<String> = []
            var unsynced: Set<String> = []
            var commitsSinceSync = 0
        }

        let state = Mutex(State())
    }

    /// Commits between two syncs of the directories they touched.
    static let commitsPerDirectorySync = 128

    /// Where mirror keeps partial downloads, the state database and the run lock.
    public var stateDirectory: URL { root.appendingPathComponent(".mirror", isDirectory: true) }

    public init(root: URL) throws(MirrorError) {
        self.root = root.standardizedFileURL
        rootPath = self.root.path == "/" ? "" : self.root.path
        try Self.createDirectory(self.root)
        try Self.createDirectory(stateDirectory)
    }

    /// The absolute path of `relativePath`, which must be a plain relative path (no `..`, no
    /// leading `/`): nothing is ever written outside the mirror directory.
    public func path(of relativePath: String) throws(MirrorError) -> URL {
        URL(fileURLWithPath: try absolutePath(of: relativePath))
    }

    /// ``path(of:)`` as a string.
    func absolutePath(of relativePath: String) throws(MirrorError) -> String {
        let components = relativePath.split(separator: "/", omittingEmptySubsequences: false)
        guard !relativePath.hasPrefix("/"), !components.isEmpty,
              components.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && !$0.contains("\0") }),
              components.first != ".mirror"
        else { throw MirrorError.unsafePath(relativePath) }
        return rootPath + "/" + relativePath
    }

    public func fileExists(_ relativePath: String) throws(MirrorError) -> Bool {
        let path = try absolutePath(of: relativePath)
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Moves a finished download into place under `relativePath` and returns the name it got.
    ///
    /// - Returns: nil when `mode` is ``DownloadMode/skipIfExists`` and the name was taken; the
    ///   download is then discarded.
    ///
    /// `afterRename` gets the absolute path of the file under its final name.
    public func commit(
        _ partialPath: String, as relativePath: String, mode: DownloadMode, afterRename: (String) -> Void = { _ in }
    ) throws(MirrorError) -> String? {
        let target = try absolutePath(of: relativePath)
        let parent = String(target[..<target.lastIndex(of: "/")!])
        try ensureDirectory(parent)
        try Self.sync(path: partialPath, dataOnly: true)
        var attempt = 0
        var recreated = false
        while true {
            let candidate = attempt == 0 ? relativePath : Self.numbered(relativePath, attempt)
            let candidatePath = try absolutePath(of: candidate)
            let moved: Bool
            do {
                moved = try Self.moveWithoutReplacing(partialPath, to: candidatePath)
            } catch .fileSystem(_, ENOENT) where !recreated {
                // The folder went away since this run made it: make it again, once.
                recreated = true
                _ = bookkeeping.state.withLock { $0.created.remove(parent) }
                try ensureDirectory(parent)
                continue
            }
            if moved {
                noteNewName(in: parent)
                afterRename(candidatePath)
                return candidate
            }
            if mode == .skipIfExists {
                unlink(partialPath)
                return nil
            }
            attempt += 1
        }
    }

    /// Syncs every directory that gained a name since the last sync. Those it could not sync stay
    /// due, for the next call.
    public func syncDirectories() throws(MirrorError) {
        var directories = bookkeeping.state.withLock { state in
            defer {
                state.unsynced = []
                state.commitsSinceSync = 0
            }
            return state.unsynced
        }
        while let directory = directories.first {
            do {
                try Self.sync(path: directory)
                directories.remove(directory)
            } catch {
                bookkeeping.state.withLock { $0.unsynced.formUnion(directories) }
                throw error
            }
        }
    }

    /// `mkdir -p`, once per directory and run.
    private func ensureDirectory(_ path: String) throws(MirrorError) {
        guard !bookkeeping.state.withLock({ $0.created.contains(path) }) else { return }
        try Self.createDirectory(path)
        _ = bookkeeping.state.withLock { $0.created.insert(path) }
    }

    /// Counts a new name; every so many, syncs the directories. A sync that fails here is not
    /// this file's failure: the directories stay due, and the sync at the session's end reports it.
    private func noteNewName(in directory: String) {
        let due = bookkeeping.state.withLock { state in
            state.unsynced.insert(directory)
            state.commitsSinceSync += 1
            return state.commitsSinceSync >= Self.commitsPerDirectorySync
        }
        if due { try? syncDirectories() }
    }

    /// Renames `from` to `to` unless `to` exists; false when it does. Where the file system cannot
    /// rename without replacing, `link` + `unlink` does the same in two steps.
    static func moveWithoutReplacing(_ from: String, to: String) throws(MirrorError) -> Bool {
        if mirror_rename_noreplace(from, to) == 0 { return true }
        var code = errno
        if code == EINVAL || code == ENOSYS || code == EOPNOTSUPP {
            if link(from, to) == 0 {
                unlink(from)
                return true
            }
            code = errno
        }
        guard code == EEXIST else { throw MirrorError.fileSystem(path: to, errno: code) }
        return false
    }

    /// Sets a mirrored file's modification time (best effort: a failure changes nothing else).
    public func setModificationDate(_ date: Date, of relativePath: String) {
        guard let path = try? absolutePath(of: relativePath) else { return }
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let nanoseconds = Int((date.timeIntervalSince1970 - seconds) * 1e9)
        let omit = (1 << 30) - 2  // UTIME_OMIT, a macro Swift does not import: the access time stays
        let times = [timespec(tv_sec: 0, tv_nsec: omit), timespec(tv_sec: Int(seconds), tv_nsec: nanoseconds)]
        // On the file itself, never through a link planted under its name.
        _ = utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW)
    }

    /// `dir/name.ext` → `dir/name(n).ext`.
    static func numbered(_ relativePath: String, _ number: Int) -> String {
        insert("(\(number))", beforeExtensionOf: relativePath)
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

    /// `mkdir -p`, reporting the errno of the component that failed.
    static func createDirectory(_ url: URL) throws(MirrorError) {
        try createDirectory(url.path)
    }

    static func createDirectory(_ absolutePath: String) throws(MirrorError) {
        var path = ""
        for component in absolutePath.split(separator: "/") {
            path += "/" + component
            guard mkdir(path, 0o755) != 0 else { continue }
            let code = errno
            var info = stat()
            guard code == EEXIST, stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
                throw MirrorError.fileSystem(path: path, errno: code == EEXIST ? ENOTDIR : code)
            }
        }
    }

    /// fsync a file or directory, so a rename or link that follows survives a power cut;
    /// `dataOnly` (fdatasync) for a file whose name is about to change anyway.
    static func sync(path: String, dataOnly: Bool = false) throws(MirrorError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw MirrorError.fileSystem(path: path, errno: errno) }
        defer { close(fd) }
        guard (dataOnly ? fdatasync(fd) : fsync(fd)) == 0 else { throw MirrorError.fileSystem(path: path, errno: errno) }
    }
}
