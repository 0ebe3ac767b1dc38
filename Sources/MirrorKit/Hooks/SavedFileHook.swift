import Synchronization

/// A file the mirror has just saved under its final name, as a hook hears of it.
package struct SavedFile: Sendable, Equatable {
    /// The file's absolute path.
    package var path: String
    /// The mirror directory, absolute: where a hook runs.
    package var mirror: String
    /// The path relative to the mirror directory.
    package var relativePath: String
    /// The URL that served it.
    package var url: String
    /// What it is a version of: the media URL of an image, the entry of a feed's release.
    package var item: String
    /// The source that listed it (`tag cats`, `feed https://…`).
    package var source: String?
    package var bytes: Int64
}

/// Something to do with every file the mirror saves (run a command, say). A failure is the
/// hook's, not the file's: the file stays saved, and the run reports the failure at its end.
package protocol SavedFileHook: Sendable {
    /// Called once the file is named and recorded; returns a description of what went wrong, or
    /// nil when all went well.
    func saved(_ file: SavedFile) async -> String?
}

/// What hooks said went wrong, gathered for the end of a source's run.
final class HookFailures: Sendable {
    private let failures = Mutex<[String]>([])

    func add(_ failure: String) {
        failures.withLock { $0.append(failure) }
    }

    /// Failures named one by one at most; more are counted, not listed (a hook that fails for
    /// every file of a big tag must not fill the cron mail).
    static let named = 20

    /// The failures so far, which are then forgotten: the first ``named``, then how many more.
    func take() -> [String] {
        failures.withLock { failures in
            defer { failures = [] }
            guard failures.count > Self.named else { return failures }
            return Array(failures.prefix(Self.named)) + ["… and \(failures.count - Self.named) more hook failures like these"]
        }
    }
}
