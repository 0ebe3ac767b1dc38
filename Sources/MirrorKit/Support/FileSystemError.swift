import FoundationEssentials
import Glibc

/// Why a step on the file system failed, with the path it concerned: every file-system failure
/// reaches the user as one line that names the path and says why.
package struct FileSystemError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Problem: Sendable, Equatable {
        /// The call failed with this errno.
        case system(Int32)
        /// A symbolic link where mirror expects its own file or folder.
        case symbolicLink
        case notADirectory
        case notARegularFile
        /// Owned by another user (this uid), who could plant links in it.
        case ownedByAnotherUser(uid: UInt32)
        /// Group or others may write into it (these permission bits), and so plant links in it.
        case writableByOthers(mode: UInt32)
        /// The file has more names than one: writing it would change another file too.
        case multipleLinks(Int)
        /// The name is not a single path component.
        case invalidName
        /// The file's bytes are not those it held a moment before (another write came between).
        case changedMeanwhile
        /// A text file read a line at a time has a line longer than this: it is not the text
        /// it should be.
        case lineTooLong(limit: Int)
    }

    var path: String
    var problem: Problem

    init(path: String, problem: Problem) {
        self.path = path
        self.problem = problem
    }

    init(path: String, errno code: Int32) {
        self.init(path: path, problem: code == ELOOP ? .symbolicLink : .system(code))
    }

    /// The failure the last call left in errno, read before `path` is built: building a string
    /// may call into libc and change errno.
    static func last(path: @autoclosure () -> String) -> FileSystemError {
        let code = Glibc.errno
        return FileSystemError(path: path(), errno: code)
    }

    /// The errno behind the failure, where a call failed.
    var errno: Int32? {
        if case .system(let code) = problem { return code }
        return nil
    }

    /// Something not made by mirror holds the name: a link, a file with other names, not a file.
    var isSomeoneElses: Bool {
        switch problem {
        case .symbolicLink, .multipleLinks, .notARegularFile: true
        default: false
        }
    }

    /// The failure is the disk's or the mirror's, not one name's: every other file would meet it
    /// too (no space, a read-only or failing disk, a planted link or folder), so the run stops.
    /// A name too long, or refused by the file system (`:` on exFAT), fails that file alone.
    var stopsTheRun: Bool {
        switch problem {
        case .system(let code): [ENOSPC, EDQUOT, EROFS, EIO, EACCES].contains(code)
        case .symbolicLink, .notADirectory, .ownedByAnotherUser, .writableByOthers: true
        case .notARegularFile, .multipleLinks, .invalidName, .changedMeanwhile, .lineTooLong: false
        }
    }


    package var description: String {
        let shown = path
        switch problem {
        case .system(let code):
            return "\(shown): \(String(cString: strerror(code)))"
        case .symbolicLink:
            return "\(shown) is a symbolic link; mirror never follows links inside its directory"
        case .notADirectory:
            return "\(shown) is not a directory"
        case .notARegularFile:
            return "\(shown) is not a regular file; mirror only writes files it made"
        case .ownedByAnotherUser(let uid):
            return "\(shown) belongs to another user (uid \(uid)), who could plant links in it; "
                + "mirror only works in folders you own"
        case .writableByOthers(let mode):
            return "\(shown) is writable by group or others (mode \(String(mode & 0o7777, radix: 8))), "
                + "who could plant links in it; run chmod go-w on it"
        case .multipleLinks(let count):
            return "\(shown) has \(count) hard links; writing it would change another file"
        case .invalidName:
            return "\(shown) is not a plain file name"
        case .changedMeanwhile:
            return "\(shown) changed on disk before it could be archived"
        case .lineTooLong(let limit):
            return "\(shown) has a line longer than \(limit) bytes; it is not the text it should be"
        }
    }
}
