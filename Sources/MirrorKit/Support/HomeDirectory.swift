import FoundationEssentials
import Glibc

/// `~` and `~user` at the start of a path, as shells expand them, for paths given in a config
/// file (which no shell has read).
package enum HomeDirectory {
    /// `path` with a leading `~` (this user's home: `$HOME`, else the password database's) or
    /// `~user` replaced; unchanged when it has none, or names a user who does not exist.
    package static func expandingTilde(in path: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        guard path.hasPrefix("~") else { return path }
        let end = path.firstIndex(of: "/") ?? path.endIndex
        let user = path[path.index(after: path.startIndex)..<end]
        let home: String?
        if user.isEmpty {
            home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? UserAccounts.homeDirectory()
        } else {
            home = UserAccounts.homeDirectory(ofUser: String(user))
        }
        guard var home else { return path }
        // "~/x" under a home of "/" is "/x", not "//x".
        while home.count > 1 && home.hasSuffix("/") { home.removeLast() }
        let rest = path[end...]
        return home == "/" && rest.hasPrefix("/") ? String(rest) : home + rest
    }
}
