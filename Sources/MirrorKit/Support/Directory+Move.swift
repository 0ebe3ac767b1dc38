import CMirrorSystem
import FoundationEssentials
import Glibc

extension Directory {
    /// Gives the file `name` the first of `newNames` not taken in `target`, and returns it; nil
    /// when every one is taken, and nothing moved. Each try is one step (`renameat2` with
    /// `RENAME_NOREPLACE`), so there is never a moment where the file has two names. Across file
    /// systems (`target` is a mount of its own) the file is copied once into a new file in
    /// `target`, with its `user.` attributes, synced, and renamed there in the same one step;
    /// the source goes once the copy has its name, and `copied` says so: a descriptor open on
    /// the source is then no longer the named file's.
    func move(
        _ name: String, to target: Directory, firstFreeOf newNames: some Sequence<String>
    ) throws(FileSystemError) -> (name: String, copied: Bool)? {
        try checkName(name)
        var copy: String?
        defer { if let copy { target.remove(copy) } }
        for newName in newNames {
            try target.checkName(newName)
            let placed: Bool
            if let copied = copy {
                placed = try target.rename(copied, to: target, unlessTaken: newName)
            } else {
                do {
                    placed = try rename(name, to: target, unlessTaken: newName)
                } catch where error.errno == EXDEV {
                    // Copied once; the copy then tries this name and the ones after it.
                    let copied = try copyAcross(name, to: target)
                    copy = copied
                    placed = try target.rename(copied, to: target, unlessTaken: newName)
                }
            }
            guard placed else { continue }
            if copy != nil {
                copy = nil
                remove(name)
                return (newName, true)
            }
            return (newName, false)
        }
        return nil
    }

    /// ``move(_:to:firstFreeOf:)`` to the one name `newName`: false when it is taken.
    func move(_ name: String, to target: Directory, as newName: String) throws(FileSystemError) -> Bool {
        try move(name, to: target, firstFreeOf: CollectionOfOne(newName)) != nil
    }

    /// Gives `name` the name `newName` in `target` unless that name is taken (false then). Where
    /// the file system has no RENAME_NOREPLACE (NFS, many FUSE mounts answer EINVAL), link and
    /// unlink do it in two steps: a kill between them leaves two names on one inode, and no
    /// writer writes into such a file. Across file systems it throws with errno EXDEV.
    private func rename(_ name: String, to target: Directory, unlessTaken newName: String) throws(FileSystemError) -> Bool {
        if mirror_renameat_noreplace(descriptor, name, target.descriptor, newName) == 0 { return true }
        var code = Glibc.errno
        if code == EINVAL || code == ENOSYS || code == EOPNOTSUPP {
            if linkat(descriptor, name, target.descriptor, newName, 0) == 0 {
                remove(name)
                return true
            }
            code = Glibc.errno
        }
        if code == EEXIST { return false }
        throw FileSystemError(path: target.path(of: newName), errno: code)
    }

    /// Puts a copy of the file `name` (its bytes and `user.` attributes, synced) in its place, on
    /// a new inode: whoever holds the old one open writes where no name leads.
    func replaceWithCopy(_ name: String) throws(FileSystemError) {
        let copy = try copyAcross(name, to: self)
        guard renameat(descriptor, copy, descriptor, name) == 0 else {
            let failure = FileSystemError.last(path: path(of: name))
            remove(copy)
            throw failure
        }
    }

    /// The cross-file-system half of a move: a hidden new file in `target` with the bytes and the
    /// `user.` attributes of `name`, synced; its name is returned.
    private func copyAcross(_ name: String, to target: Directory) throws(FileSystemError) -> String {
        let source = try openFile(name, .read)
        defer { close(source) }
        let temporary = Self.temporaryName()
        let destination = try target.openFile(temporary, .write(create: true, exclusive: true))
        do throws(FileSystemError) {
            defer { close(destination) }
            try Self.copyAll(from: source, path: path(of: name), to: destination, path: target.path(of: temporary))
            Self.copyUserAttributes(from: source, to: destination)
            guard fsync(destination) == 0 else { throw FileSystemError.last(path: target.path(of: temporary)) }
        } catch {
            target.remove(temporary)
            throw error
        }
        return temporary
    }

    /// Copies the `user.` extended attributes (a partial's record among them) where the target
    /// keeps them; best effort, like `cp --preserve=xattr`.
    private static func copyUserAttributes(from source: Int32, to destination: Int32) {
        let size = mirror_flistxattr(source, nil, 0)
        guard size > 0 else { return }
        var list = [CChar](repeating: 0, count: size)
        let listed = mirror_flistxattr(source, &list, list.count)
        guard listed > 0 else { return }
        var value = [UInt8](repeating: 0, count: 64 << 10)
        for name in list[..<listed].split(separator: 0) {
            let attribute = String(decoding: name.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard attribute.hasPrefix("user.") else { continue }
            let length = mirror_fgetxattr(source, attribute, &value, value.count)
            guard length >= 0 else { continue }
            _ = setAttribute(attribute, Array(value[..<length]), onFile: destination)
        }
    }

    private static func copyAll(from source: Int32, path: String, to destination: Int32, path targetPath: String) throws(FileSystemError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while true {
            let count = read(source, buffer.baseAddress, buffer.count)
            if count < 0, Glibc.errno == EINTR { continue }
            guard count >= 0 else { throw FileSystemError.last(path: path) }
            if count == 0 { return }
            var written = 0
            try writeAll(
                UnsafeRawBufferPointer(rebasing: buffer[0..<count]), to: destination, at: offset, path: targetPath,
                written: &written)
            offset += Int64(count)
        }
    }

    /// Sets the extended attribute `attribute` of the open file `fd`; false where the file
    /// system keeps none (or not this large).
    static func setAttribute(_ attribute: String, _ value: [UInt8], onFile fd: Int32) -> Bool {
        value.withUnsafeBytes { mirror_fsetxattr(fd, attribute, $0.baseAddress, $0.count) } == 0
    }

    /// Takes the extended attribute `attribute` off the open file `fd`; true when this call took
    /// it off (false when it was not there, or stays: the file is not the caller's to change).
    @discardableResult
    static func removeAttribute(_ attribute: String, fromFile fd: Int32) -> Bool {
        mirror_fremovexattr(fd, attribute) == 0
    }

    /// Removes the extended attribute `attribute` of the file `name`, if it is one of ours; true
    /// when this call took it off.
    @discardableResult
    func removeAttribute(_ attribute: String, of name: String) -> Bool {
        guard let fd = try? openFile(name, .read) else { return false }
        defer { close(fd) }
        return Self.removeAttribute(attribute, fromFile: fd)
    }

    /// Sets the modification time of the file `name` itself (never of a link's target); best
    /// effort.
    func setModificationDate(_ date: Date, of name: String) {
        _ = utimensat(descriptor, name, Self.times(modified: date), AT_SYMLINK_NOFOLLOW)
    }

    /// Dates the open file `fd` now (its access time too); best effort.
    static func setModificationDateToNow(ofFile fd: Int32) {
        _ = futimens(fd, nil)
    }

    /// Sets the modification time of the open file `fd` (best effort).
    static func setModificationDate(_ date: Date, ofFile fd: Int32) {
        _ = futimens(fd, times(modified: date))
    }

    private static func times(modified date: Date) -> [timespec] {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let nanoseconds = Int((date.timeIntervalSince1970 - seconds) * 1e9)
        let omit = (1 << 30) - 2  // UTIME_OMIT, a macro Swift does not import: the access time stays
        return [timespec(tv_sec: 0, tv_nsec: omit), timespec(tv_sec: Int(seconds), tv_nsec: nanoseconds)]
    }
}

/// A file descriptor closed when the last reference to it goes.
final class OpenFile: Sendable {
    let descriptor: Int32

    init(_ descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }
}
