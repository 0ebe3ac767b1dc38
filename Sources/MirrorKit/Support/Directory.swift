import CMirrorSystem
import FoundationEssentials
import Glibc
import Synchronization

/// A directory held open by its descriptor: every name in it is reached relative to that
/// descriptor with `O_NOFOLLOW`, one component at a time.
///
/// So a symbolic link planted anywhere inside the mirror is never followed, and a folder that
/// was checked cannot be swapped for another before it is used: the descriptor stays on the
/// folder that passed. Folders mirror keeps (``folder(_:create:)``) must be real directories,
/// owned by the user running mirror and writable by nobody else; files it writes must be regular
/// files with one name. Only the root is reached by its path, links and all: the user named it.
final class Directory: Sendable {
    let descriptor: Int32
    /// For messages: the path the directory was reached by.
    let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit {
        close(descriptor)
    }

    /// Opens the directory at `path`, creating it and its missing parents (`mkdir -p`).
    static func open(creating path: String) throws(FileSystemError) -> Directory {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            guard mkdir(prefix, 0o755) != 0 else { continue }
            let code = Glibc.errno
            guard code == EEXIST else { throw FileSystemError(path: prefix, errno: code) }
        }
        return try open(existing: path)
    }

    /// Opens the existing directory at `path`.
    static func open(existing path: String) throws(FileSystemError) -> Directory {
        let fd = Glibc.open(path.isEmpty ? "/" : path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = Glibc.errno
            throw FileSystemError(path: path, problem: code == ENOTDIR ? .notADirectory : .system(code))
        }
        return Directory(descriptor: fd, path: path)
    }

    /// The path of `name` inside, for messages.
    func path(of name: String) -> String {
        path == "/" ? "/" + name : path + "/" + name
    }

    // MARK: - Folders

    /// The folder `name` inside this one, made (mode 0755) when missing and `create` is set.
    /// Refused when it is a link, not a directory, owned by another user or writable by others.
    func folder(_ name: String, create: Bool = true) throws(FileSystemError) -> Directory {
        let folder = try openFolder(name, create: create)
        try folder.checkOwnership()
        return folder
    }

    /// The existing folder `name` inside this one, opened to be read only: never through a link,
    /// but whoever owns it (reading another user's mirror plants nothing in it).
    func folderForReading(_ name: String) throws(FileSystemError) -> Directory {
        try openFolder(name, create: false)
    }

    /// The folder `name`, never through a link, made when missing and `create` is set; unchecked.
    private func openFolder(_ name: String, create: Bool) throws(FileSystemError) -> Directory {
        try checkName(name)
        let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
        var fd = openat(descriptor, name, flags)
        if fd < 0, Glibc.errno == ENOENT, create {
            if mkdirat(descriptor, name, 0o755) != 0 {
                let code = Glibc.errno
                if code != EEXIST { throw FileSystemError(path: path(of: name), errno: code) }
            }
            fd = openat(descriptor, name, flags)
        }
        guard fd >= 0 else { throw failure(opening: name, errno: Glibc.errno) }
        return Directory(descriptor: fd, path: path(of: name))
    }

    /// The folder at `relativePath` (components separated by `/`), each made and checked in turn.
    func folder(atRelativePath relativePath: some StringProtocol, create: Bool = true) throws(FileSystemError) -> Directory {
        var current = self
        for component in relativePath.split(separator: "/") {
            current = try current.folder(String(component), create: create)
        }
        return current
    }

    /// Throws when another user may swap the names in the directory: it is writable by group or
    /// others without the sticky bit, or belongs to someone other than the user or root. The
    /// root of the mirror is checked so, since the state database is opened by path through it.
    func checkNamesAreSafe() throws(FileSystemError) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw FileSystemError.last(path: path) }
        guard info.st_uid == geteuid() || info.st_uid == 0 else {
            throw FileSystemError(path: path, problem: .ownedByAnotherUser(uid: info.st_uid))
        }
        let writableByOthers = info.st_mode & 0o002 != 0
        let writableByGroup = info.st_mode & 0o020 != 0 && !UserAccounts.isPrivateGroup(info.st_gid)
        guard !(writableByOthers || writableByGroup) || info.st_mode & S_ISVTX != 0 else {
            throw FileSystemError(path: path, problem: .writableByOthers(mode: info.st_mode))
        }
    }

    /// Throws unless the directory belongs to the user running mirror and nobody else may write
    /// into it: anyone who can is able to plant names in it.
    func checkOwnership() throws(FileSystemError) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw FileSystemError.last(path: path) }
        guard info.st_uid == geteuid() else { throw FileSystemError(path: path, problem: .ownedByAnotherUser(uid: info.st_uid)) }
        guard info.st_mode & 0o022 == 0 else { throw FileSystemError(path: path, problem: .writableByOthers(mode: info.st_mode)) }
    }

    // MARK: - Files

    enum Access: Sendable {
        case read
        /// Writing; `create` makes the file when it is missing, `exclusive` only a new one.
        case write(create: Bool, exclusive: Bool = false)
    }

    /// Opens the file `name`, never through a link, and only a regular file (a FIFO or device
    /// planted under the name is refused too), with one name when it is to be written: reading
    /// a file a snapshot tool hard-linked changes nothing else. The caller closes the descriptor.
    func openFile(_ name: String, _ access: Access) throws(FileSystemError) -> Int32 {
        try openFileWithStatus(name, access).descriptor
    }

    /// ``openFile(_:_:)``, with the opened file's status (taken for the checks anyway).
    func openFileWithStatus(_ name: String, _ access: Access) throws(FileSystemError) -> (descriptor: Int32, status: stat) {
        try checkName(name)
        var flags = O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK
        switch access {
        case .read: flags |= O_RDONLY
        case .write(let create, let exclusive):
            flags |= O_RDWR | (create ? O_CREAT : 0) | (exclusive ? O_EXCL : 0)
        }
        let fd = openat(descriptor, name, flags, 0o644)
        guard fd >= 0 else { throw failure(opening: name, errno: Glibc.errno) }
        var info = stat()
        var problem = fstat(fd, &info) == 0 ? Self.problem(withFile: info) : .system(Glibc.errno)
        if case .read = access, case .multipleLinks? = problem { problem = nil }
        if let problem {
            close(fd)
            throw FileSystemError(path: path(of: name), problem: problem)
        }
        return (fd, info)
    }

    /// Why a file with status `info` must not be written: a link, not a regular file, or a file
    /// with another name; nil for a file of mirror's own.
    static func problem(withFile info: stat) -> FileSystemError.Problem? {
        switch info.st_mode & S_IFMT {
        case S_IFLNK: .symbolicLink
        case S_IFREG: info.st_nlink > 1 ? .multipleLinks(Int(info.st_nlink)) : nil
        default: .notARegularFile
        }
    }

    /// What `name` is, without following a link; nil when there is nothing by that name.
    func status(of name: String) -> stat? {
        var info = stat()
        return fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 ? info : nil
    }

    /// Whether anything (a link too) has the name `name`.
    func contains(_ name: String) -> Bool { status(of: name) != nil }

    /// Removes the name `name` (a link itself, never its target); nothing when it is absent.
    func remove(_ name: String) {
        unlinkat(descriptor, name, 0)
    }

    /// The names in the directory (see ``forEachEntry(_:)``).
    func names() -> [String] {
        var names: [String] = []
        forEachEntry { name, _ in names.append(name) }
        return names
    }

    /// Calls `body` with each name in the directory and the kind readdir gives (DT_DIR, DT_REG,
    /// DT_LNK…; DT_UNKNOWN where the file system does not say), `.` and `..` left out, holding
    /// none of them: the mirror's folder of 200,000 files, listed at once, took 4.8 MiB. Read
    /// through a description of its own (a `dup` would share the read position with every other
    /// listing of this directory).
    func forEachEntry(_ body: (_ name: String, _ kind: UInt8) -> Void) {
        let own = openat(descriptor, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard own >= 0, let stream = fdopendir(own) else {
            if own >= 0 { close(own) }
            return
        }
        defer { closedir(stream) }
        Self.forEachEntry(readingWith: { readdir(stream).map { UnsafePointer($0) } }, body)
    }

    /// Calls `body` with the name and kind of each entry `next` returns, `.` and `..` left out,
    /// reading each where it lies. A record is only as long as its name (`d_reclen`): a copy of
    /// the whole `dirent`, or of its 256-byte `d_name`, reads past the last record of readdir's
    /// buffer, and crashed the run where that buffer ended a mapping (a fresh thread's heap: the
    /// unchanged rerun of 10,000 images, 9 times in 10).
    static func forEachEntry(readingWith next: () -> UnsafePointer<dirent>?, _ body: (_ name: String, _ kind: UInt8) -> Void) {
        while let entry = next() {
            let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
            if name != ".", name != ".." { body(name, UnsafeRawPointer(entry).load(fromByteOffset: kindOffset, as: UInt8.self)) }
        }
    }

    private static let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
    private static let kindOffset = MemoryLayout<dirent>.offset(of: \dirent.d_type)!

    /// Removes the temporary files (``temporaryName()``) that another process left in this folder
    /// and the folders below it, `levels` deep, never through a link and never into another
    /// mirror (a folder with a `.mirror` of its own): what a write or a copy across file systems
    /// that was killed leaves. For a folder no other process writes to (the mirror, under its
    /// lock). Returns the paths removed.
    func removeTemporariesOfOtherProcesses(levels: Int = 16) -> [String] {
        // Only the names to act on are kept, and acted on once the folder has been read: an NFS
        // or SMB server may skip entries of a folder read while it changes, and one stream per
        // level open at once would stack their buffers.
        var temporaries: [String] = []
        var folders: [String] = []
        forEachEntry { name, kind in
            let isFolder = kind == UInt8(DT_DIR) || (kind == UInt8(DT_UNKNOWN) && status(of: name).map { $0.st_mode & S_IFMT == S_IFDIR } == true)
            if name.hasPrefix(".mirror-tmp."), !name.hasPrefix(Self.ownTemporaryPrefix), !isFolder {
                temporaries.append(name)
            } else if isFolder, levels > 0 {
                folders.append(name)
            }
        }
        var removed = temporaries.filter { unlinkat(descriptor, $0, 0) == 0 }.map(path(of:))
        for name in folders {
            guard let folder = try? folderForReading(name), !folder.contains(".mirror") else { continue }
            removed += folder.removeTemporariesOfOtherProcesses(levels: levels - 1)
        }
        return removed
    }

    /// A name for a temporary file no other writer of this process or another uses at once.
    static func temporaryName() -> String {
        ownTemporaryPrefix + "\(temporaryCounter.add(1, ordering: .relaxed).newValue)"
    }

    /// This process's temporary names: its pid and a nonce, since in a container every run may
    /// get the same pid.
    private static let ownTemporaryPrefix = ".mirror-tmp.\(getpid()).\(String(UInt32.random(in: 0...UInt32.max), radix: 16))."

    private static let temporaryCounter = Atomic<Int>(0)

    /// Reads the whole of the file `name`, if it is a regular file no larger than `limit`.
    func contents(of name: String, limit: Int = 1 << 20) -> [UInt8]? {
        guard let fd = try? openFile(name, .read) else { return nil }
        defer { close(fd) }
        // A read that fails part way is no file's contents, not a shorter file.
        guard case .bytes(let bytes) = DescriptorReading.readToEnd(fd, limit: limit) else { return nil }
        return bytes
    }

    /// Replaces the file `name` with `bytes` in one step: written to a new file, synced, then
    /// renamed over the name (the rename replaces whatever the name was, a link too, and writes
    /// through nothing).
    /// `durable` syncs the data before the rename, for files whose loss would matter.
    func replaceContents(of name: String, with bytes: some Collection<UInt8>, durable: Bool = true) throws(FileSystemError) {
        let bytes = Array(bytes)
        try replaceContents(of: name, durable: durable) { (append: ([UInt8]) throws(FileSystemError) -> Void) throws(FileSystemError) in
            try append(bytes)
        }
    }

    /// ``replaceContents(of:with:durable:)`` for contents made a piece at a time: `produce` hands
    /// each piece, in order, to the function it is given.
    func replaceContents(
        of name: String, durable: Bool = true,
        writing produce: (_ append: ([UInt8]) throws(FileSystemError) -> Void) throws(FileSystemError) -> Void
    ) throws(FileSystemError) {
        let temporary = Self.temporaryName()
        let fd = try openFile(temporary, .write(create: true, exclusive: true))
        do throws(FileSystemError) {
            var end: Int64 = 0
            let at = path(of: temporary)
            try produce { (piece: [UInt8]) throws(FileSystemError) in
                try Self.writeAll(piece, to: fd, at: end, path: at)
                end += Int64(piece.count)
            }
            guard !durable || fdatasync(fd) == 0 else { throw FileSystemError.last(path: path(of: temporary)) }
            close(fd)
        } catch {
            close(fd)
            remove(temporary)
            throw error
        }
        guard renameat(descriptor, temporary, descriptor, name) == 0 else {
            let code = Glibc.errno
            remove(temporary)
            throw FileSystemError(path: path(of: name), errno: code)
        }
    }

    // MARK: - Durability

    /// fsync of the directory itself, so that the names it gained survive a power cut.
    func sync() throws(FileSystemError) {
        guard fsync(descriptor) == 0 else { throw FileSystemError.last(path: path) }
    }

    /// Writes all of `bytes` at `offset`, going on after short writes and EINTR. `written` counts
    /// the bytes the kernel took, also when a write fails part way.
    static func writeAll(
        _ bytes: UnsafeRawBufferPointer, to fd: Int32, at offset: Int64, path: @autoclosure () -> String,
        written: inout Int
    ) throws(FileSystemError) {
        written = 0
        while written < bytes.count {
            let result = pwrite(fd, bytes.baseAddress! + written, bytes.count - written, off_t(offset) + off_t(written))
            if result < 0 {
                if Glibc.errno == EINTR { continue }
                throw FileSystemError.last(path: path())
            }
            written += result
        }
    }

    /// Fills `buffer` from `offset` of `fd`, going on after short reads and EINTR, and returns how
    /// many bytes were read: fewer than asked only where the file ends.
    static func readAll(
        into buffer: UnsafeMutableRawBufferPointer, from fd: Int32, at offset: Int64, path: @autoclosure () -> String
    ) throws(FileSystemError) -> Int {
        var done = 0
        while done < buffer.count {
            let result = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            if result < 0 {
                if Glibc.errno == EINTR { continue }
                throw FileSystemError.last(path: path())
            }
            if result == 0 { break }
            done += result
        }
        return done
    }

    static func writeAll(_ bytes: [UInt8], to fd: Int32, at offset: Int64, path: String) throws(FileSystemError) {
        var written = 0
        let result: Result<Void, FileSystemError> = bytes.withUnsafeBytes { buffer in
            Result { () throws(FileSystemError) in try writeAll(buffer, to: fd, at: offset, path: path, written: &written) }
        }
        try result.get()
    }

    // MARK: - Extended attributes

    /// The extended attribute `attribute` of the file `name`, if it has one of at most `limit` bytes.
    func attribute(_ attribute: String, of name: String, limit: Int) -> [UInt8]? {
        guard let fd = try? openFile(name, .read) else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: limit)
        let count = buffer.withUnsafeMutableBytes { mirror_fgetxattr(fd, attribute, $0.baseAddress, $0.count) }
        return count > 0 ? Array(buffer[..<count]) : nil
    }

    /// Why opening `name` failed: a link or a non-directory found under it is named as such.
    private func failure(opening name: String, errno code: Int32) -> FileSystemError {
        if let info = status(of: name) {
            if info.st_mode & S_IFMT == S_IFLNK { return FileSystemError(path: path(of: name), problem: .symbolicLink) }
            if code == ENOTDIR { return FileSystemError(path: path(of: name), problem: .notADirectory) }
        }
        return FileSystemError(path: path(of: name), errno: code)
    }

    func checkName(_ name: String) throws(FileSystemError) {
        // Over the name's bytes: every file step checks its names.
        guard name.withUTF8Bytes(Self.isPlainName) else { throw FileSystemError(path: path(of: name), problem: .invalidName) }
    }

    /// Whether `name` (its bytes) names something inside a folder: not empty, not `.` or `..`,
    /// no `/`, no NUL.
    static func isPlainName(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        let dot = UInt8(ascii: ".")
        switch name.count {
        case 0: return false
        case 1 where name[0] == dot, 2 where name[0] == dot && name[1] == dot: return false
        default: return !name.contains { $0 == UInt8(ascii: "/") || $0 == 0 }
        }
    }
}
