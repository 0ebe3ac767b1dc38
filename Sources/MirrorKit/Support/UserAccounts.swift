import FoundationEssentials
import Glibc

/// What the account databases say (who else may write where the user's group may, and where
/// accounts' homes are), read with the reentrant calls: `getpwuid`, `getpwnam` and `getgrgid`
/// share one buffer per process, and the test runner and other threads call them too.
enum UserAccounts {
    /// Whether `gid` is the user's own private group (Debian's and Ubuntu's user-private groups,
    /// where umask 002 makes every `mkdir` group-writable without letting anyone else write): the
    /// user's group, named after the user, with no other member listed, and no other account in
    /// `/etc/passwd` having it as its primary group (those are not listed as members).
    static func isPrivateGroup(_ gid: gid_t) -> Bool {
        let uid = geteuid()
        guard gid == getegid(), let user = userName(uid), let (groupName, members) = groupEntry(gid),
              groupName == user, members.allSatisfy({ $0 == user })
        else { return false }
        return !anotherAccount(besides: uid, hasPrimaryGroup: gid)
    }

    private static func userName(_ uid: uid_t) -> String? {
        account(lookup: { getpwuid_r(uid, $0, $1, $2, $3) }) { $0.pw_name }
    }

    /// The home directory of the account `uid` (by default this process's user).
    static func homeDirectory(of uid: uid_t = getuid()) -> String? {
        account(lookup: { getpwuid_r(uid, $0, $1, $2, $3) }) { $0.pw_dir }
    }

    /// The home directory of the account named `name`.
    static func homeDirectory(ofUser name: String) -> String? {
        account(lookup: { getpwnam_r(name, $0, $1, $2, $3) }) { $0.pw_dir }
    }

    /// A string of the password database's entry that `lookup` (a `getpw…_r` call) finds, read
    /// while the buffer holding it lives.
    private static func account(
        lookup: (UnsafeMutablePointer<passwd>, UnsafeMutablePointer<CChar>, Int, UnsafeMutablePointer<UnsafeMutablePointer<passwd>?>) -> Int32,
        field: (passwd) -> UnsafeMutablePointer<CChar>?
    ) -> String? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 << 10)
        return buffer.withUnsafeMutableBufferPointer { storage in
            guard lookup(&entry, storage.baseAddress!, storage.count, &found) == 0, found != nil, let text = field(entry) else { return nil }
            return String(cString: text)
        }
    }

    private static func groupEntry(_ gid: gid_t) -> (name: String, members: [String])? {
        var entry = Glibc.group()
        var found: UnsafeMutablePointer<Glibc.group>?
        var buffer = [CChar](repeating: 0, count: 64 << 10)
        guard getgrgid_r(gid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let name = entry.gr_name else { return nil }
        var members: [String] = []
        var member = entry.gr_mem
        while let list = member, let name = list.pointee {
            members.append(String(cString: name))
            member = list + 1
        }
        return (String(cString: name), members)
    }

    /// Unreadable, the file counts as naming another account: a group is private only when shown so.
    private static func anotherAccount(besides uid: uid_t, hasPrimaryGroup gid: gid_t) -> Bool {
        guard let text = try? String(contentsOfFile: "/etc/passwd", encoding: .utf8) else { return true }
        return text.split(separator: "\n").contains { line in
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            return fields.count > 3 && fields[3] == "\(gid)" && fields[2] != "\(uid)"
        }
    }
}
