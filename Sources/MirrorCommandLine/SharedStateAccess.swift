import FoundationEssentials
import Glibc
import MirrorKit

/// How a command reaches a shared state (`--state postgresql://…`).
///
/// PostgreSQL's client, with SwiftNIO and its TLS, is linked only into `mirror-postgresql`; the
/// `mirror` most runs use hands a run with a shared state over to it by `exec`, with the same
/// arguments, as git hands an https remote to `git-remote-https` so that git itself carries no
/// HTTP library. Same process, same arguments: cron, systemd and the exit status see no difference.
package enum SharedStateAccess {
    /// The connector of the executable that links PostgreSQL's client; nil in `mirror`.
    @TaskLocal package static var connector: (any SharedDatabaseConnector)?

    /// The name of the executable that opens shared states.
    static let helperName = "mirror-postgresql"

    /// The connector to open `location` with. In `mirror`, which has none, this replaces the
    /// process with `mirror-postgresql` and does not return; it throws when that is not installed.
    static func connector(for location: PostgresLocation) throws -> any SharedDatabaseConnector {
        if let connector { return connector }
        let candidates = helperCandidates()
        guard let helper = candidates.first(where: isProgram) else {
            let looked = candidates.isEmpty ? "cannot tell where mirror runs from: /proc/self/exe" : candidates.joined(separator: " and ")
            throw ExitStatus.fail(
                "the shared state \(location) needs \(helperName), which is not installed (looked for \(looked))",
                status: ExitStatus.unavailable)
        }
        // What this process printed must not be printed again, or lost, by the one it becomes.
        fflush(nil)
        // The same arguments, argv[0] too: ps and pidof show the command as it was given.
        let arguments = CommandLine.arguments.map { strdup($0) } + [nil]
        execv(helper, arguments)
        let reason = String(cString: strerror(errno))
        arguments.forEach { free($0) }
        throw ExitStatus.fail("cannot run \(helper) for the shared state: \(reason)", status: ExitStatus.unavailable)
    }

    /// A regular file this user may run.
    private static func isProgram(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(path, X_OK) == 0
    }

    /// Beside this executable (a build directory, or one folder holding both), then where an
    /// installation keeps helper programs: `<prefix>/libexec/mirror/`. Nothing when the kernel
    /// will not say where this executable is: a name relative to the working directory could
    /// run a program someone left there.
    private static func helperCandidates() -> [String] {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return [] }
        let executable = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let folder = URL(fileURLWithPath: executable).deletingLastPathComponent()
        return [
            folder.appendingPathComponent(helperName).path,
            folder.deletingLastPathComponent().appendingPathComponent("libexec/mirror/\(helperName)").standardized.path,
        ]
    }
}

/// The entry point of both executables.
package enum CommandLineEntry {
    /// Runs the command line; `connector` opens shared states (nil: hand them over).
    package static func main(connector: (any SharedDatabaseConnector)?) async {
        await SharedStateAccess.$connector.withValue(connector) {
            await MirrorCommand.main()
        }
    }
}
