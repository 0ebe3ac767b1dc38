import Foundation
import Subprocess
import SystemPackage

/// Runs a program after each saved file, as `--exec` asks: directly, not through a shell (unless
/// the program is one), with the file in its environment: `MIRROR_PATH`, `MIRROR_RELATIVE_PATH`,
/// `MIRROR_URL`, `MIRROR_ITEM`, `MIRROR_SOURCE`, `MIRROR_BYTES`. Its standard output is dropped
/// (cron mails only what went wrong) and its standard error is mirror's, to say why it failed.
package struct CommandHook: SavedFileHook {
    /// The program (a name looked up in `PATH`, or a path) and its arguments.
    package let command: [String]

    /// `command` split at spaces, with the program found: nil and why, when it cannot be run.
    package static func make(_ commandLine: String, environment: [String: String]) -> Result<CommandHook, CommandHookError> {
        let words = commandLine.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let program = words.first else { return .failure(CommandHookError("--exec is empty: name a program")) }
        guard isRunnable(program, path: environment["PATH"] ?? "/usr/bin:/bin") else {
            return .failure(CommandHookError(
                program.contains("/") ? "--exec: \(program) is not an executable file" : "--exec: no program named \(program) in PATH"))
        }
        return .success(CommandHook(command: words))
    }

    /// A shell command, run by `/bin/sh -c`, as `--exec-shell` asks.
    package static func shell(_ script: String) -> CommandHook {
        CommandHook(command: ["/bin/sh", "-c", script])
    }

    static func isRunnable(_ program: String, path: String) -> Bool {
        if program.contains("/") { return FileManager.default.isExecutableFile(atPath: program) }
        return path.split(separator: ":").contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(program)") }
    }

    package func saved(_ file: SavedFile) async -> String? {
        let environment: [Environment.Key: String?] = [
            "MIRROR_PATH": file.path, "MIRROR_RELATIVE_PATH": file.relativePath, "MIRROR_URL": file.url,
            "MIRROR_ITEM": file.item, "MIRROR_SOURCE": file.source ?? "", "MIRROR_BYTES": String(file.bytes),
        ]
        let executable: Executable = command[0].contains("/") ? .path(.init(command[0])) : .name(command[0])
        do {
            let result = try await run(
                executable, arguments: Arguments(Array(command.dropFirst())), environment: .inherit.updating(environment),
                output: .discarded, error: .fileDescriptor(.standardError, closeAfterSpawningProcess: false))
            let status: String
            switch result.terminationStatus {
            case .exited(0): return nil
            case .exited(let code): status = "exited with \(code)"
            case .signaled(let signal): status = "was killed by signal \(signal)"
            }
            return "--exec \(command[0]) for \(file.relativePath) \(status)"
        } catch {
            return "--exec \(command[0]) for \(file.relativePath) could not run: \(error)"
        }
    }
}

/// Why `--exec` cannot run what it names.
package struct CommandHookError: Error, Sendable, CustomStringConvertible {
    package var description: String

    init(_ description: String) {
        self.description = description
    }
}
