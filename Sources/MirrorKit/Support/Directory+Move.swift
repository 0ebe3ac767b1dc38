import CMirrorSystem
import Foundation

extension Directory {
    /// Gives the file `name` the name `newName` in `target`, unless that name is taken: false
    /// then, and nothing moved. One step (`renameat2` with `RENAME_NOREPLACE`), so there is never
    /// a moment where the file has two names. Across file systems (`target` is a mount of its
    /// own) the file is copied into a new file in `target`, synced and renamed there in the same
    /// one step; the source goes once the copy has its name.
    public func move(_ name: String, to target: Directory, as newName: String) throws(FileSystemError) -> Bool {
        try checkName(name)
        try target.checkName(newName)
        if mirror_renameat_noreplace(descriptor, name, target.descriptor, newName) == 0 { return true }
        let code = Glibc.errno
        switch code {
        case EEXIST:
            return false
        case EXDEV:
            return try copy(name, to: target, as: newName)
        case EINVAL, ENOSYS, EOPNOTSUPP:
            // No RENAME_NOREPLACE here: link + unlink does it in two steps. A kill between them
            // leaves two names on one inode, and no writer writes into such a file.
            guard linkat(descriptor, name, target.descriptor, newName, 0) == 0 else {
                let linkCode = Glibc.errno
                if linkCode == EEXIST { return false }
                throw FileSystemError(path: target.path(of: newName), errno: linkCode)
            }
            remove(name)
            return true
        default:
            throw FileSystemError(path: target.path(of: newName), errno: code)
        }
    }

    /// The cross-file-system move: copy into a hidden new file beside the final name, sync it,
    /// rename it into place without replacing, then remove the source.
    private func copy(_ name: String, to target: Directory, as newName: String) throws(FileSystemError) -> Bool {
        let source = try openFile(name, .read)
        defer { close(source) }
        let temporary = Self.temporaryName()
        let destination = try target.openFile(temporary, .write(create: true, exclusive: true))
        do throws(FileSystemError) {
            defer { close(destination) }
            try Self.copyAll(from: source, path: path(of: name), to: destination, path: target.path(of: temporary))
            guard fsync(destination) == 0 else { throw FileSystemError.last(path: target.path(of: temporary)) }
        } catch {
            target.remove(temporary)
            throw error
        }
        guard mirror_renameat_noreplace(target.descriptor, temporary, target.descriptor, newName) == 0 else {
            let code = Glibc.errno
            target.remove(temporary)
            if code == EEXIST { return false }
            throw FileSystemError(path: target.path(of: newName), errno: code)
        }
        remove(name)
        return true
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

    static func removeAttribute(_ attribute: String, fromFile fd: Int32) {
        mirror_fremovexattr(fd, attribute)
    }

    /// Removes the extended attribute `attribute` of the file `name`, if it is one of ours.
    public func removeAttribute(_ attribute: String, of name: String) {
        guard let fd = try? openFile(name, .read) else { return }
        Self.removeAttribute(attribute, fromFile: fd)
        close(fd)
    }

    /// Sets the modification time of the file `name` itself (never of a link's target); best
    /// effort.
    public func setModificationDate(_ date: Date, of name: String) {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let nanoseconds = Int((date.timeIntervalSince1970 - seconds) * 1e9)
        let omit = (1 << 30) - 2  // UTIME_OMIT, a macro Swift does not import: the access time stays
        let times = [timespec(tv_sec: 0, tv_nsec: omit), timespec(tv_sec: Int(seconds), tv_nsec: nanoseconds)]
        _ = utimensat(descriptor, name, times, AT_SYMLINK_NOFOLLOW)
    }
}
