import FoundationEssentials

/// A failure of the mirror as a whole (not of a single file): configuration, the output
/// directory, the lock, the listing.
package enum MirrorError: Error, Sendable, CustomStringConvertible, Equatable {
    case configuration(String)
    case clientIDFile(path: String, problem: String)
    case unsafePath(String)
    case fileSystem(FileSystemError)
    case locked(path: String)
    case stateDatabase(path: String, problem: String)
    /// A state opened only to read (`mirror status`) that holds no mirror's state.
    case noMirrorState(path: String, problem: String)
    /// OpenSSL will not compute MD5, which names partial downloads and checks files.
    case digest(String)
    /// Another worker holds the claim (on an image) that a commit was fenced by: this worker
    /// was stopped past its lease, and its download is that worker's to finish.
    case claimTaken(String)

    /// Whether the failure is the mirror's as a whole (see ``FileSystemError/stopsTheRun``),
    /// not one file name's: an unsafe name, or a name the file system refuses, fails one file.
    var stopsTheRun: Bool {
        switch self {
        case .unsafePath, .claimTaken: false
        case .fileSystem(let error): error.stopsTheRun
        default: true
        }
    }

    package var description: String {
        switch self {
        case .configuration(let message):
            return message
        case .clientIDFile(let path, let problem):
            return "client id file \(path): \(problem)"
        case .unsafePath(let path):
            return "refusing unsafe file name '\(path)' (it would land outside the mirror directory)"
        case .fileSystem(let error):
            return error.description
        case .locked(let path):
            return "another mirror run holds \(path); not starting a second one"
        case .stateDatabase(let path, let problem), .noMirrorState(let path, let problem):
            return "state database \(path): \(problem)"
        case .digest(let message):
            return message
        case .claimTaken(let claim):
            return "the claim on \(claim) went to another worker while this one was stopped"
        }
    }
}
