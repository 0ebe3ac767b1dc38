import FoundationEssentials
import Glibc
import Subprocess
import SystemPackage

/// Runs a program after each saved file, as `--exec` asks: directly, not through a shell (unless
/// the program is one), in the mirror directory, with the file in its environment: `MIRROR_PATH`, `MIRROR_RELATIVE_PATH`,
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
        func runnable(_ path: String) -> Bool {
            var info = stat()
            return stat(path, &info) == 0 && (info.st_mode & S_IFMT) != S_IFDIR && access(path, X_OK) == 0
        }
        if program.contains("/") { return runnable(program) }
        return path.split(separator: ":").contains { runnable("\($0)/\(program)") }
    }

    /// How long one run of the program may take before it is stopped (its process group gets
    /// SIGTERM, then SIGKILL ten seconds later).
    static let timeLimit: Duration = .seconds(30 * 60)

    /// What the program is called in messages: the option that named it.
    var name: String { isShell ? "--exec-shell" : "--exec \(command[0])" }
    private var isShell: Bool { command.count == 3 && command[0] == "/bin/sh" && command[1] == "-c" }

    package func saved(_ file: SavedFile) async -> String? {
        // Not the job's task: a run stopped at its deadline lets a hook that began finish (within
        // its time limit) rather than kill it and call that a failure.
        let run = Task.detached { await self.run(for: file) }
        let timer = Task.detached {
            try? await Task.sleep(for: Self.timeLimit)
            if !Task.isCancelled { run.cancel() }
        }
        defer { timer.cancel() }
        return await run.value
    }

    private func run(for file: SavedFile) async -> String? {
        // The file's names come from remote data: they travel in the environment, never in the
        // arguments or a shell string. The state's password is not the hook's business.
        let environment: [Environment.Key: String?] = [
            "MIRROR_PATH": file.path, "MIRROR_RELATIVE_PATH": file.relativePath, "MIRROR_URL": file.url,
            "MIRROR_ITEM": file.item, "MIRROR_SOURCE": file.source ?? "", "MIRROR_BYTES": String(file.bytes),
            "PGPASSWORD": nil, "PGPASSFILE": nil,
        ]
        let executable: Executable = command[0].contains("/") ? .path(.init(command[0])) : .name(command[0])
        var options = PlatformOptions()
        // Its own process group, so a stop reaches whatever it started too.
        options.processGroupID = 0
        options.teardownSequence = [.gracefulShutDown(toProcessGroup: true, allowedDurationToNextStep: .seconds(10))]
        do {
            let result = try await Subprocess.run(
                executable, arguments: Arguments(Array(command.dropFirst())), environment: .inherit.updating(environment),
                workingDirectory: FilePath(file.mirror), platformOptions: options, output: .discarded, error: .fileDescriptor(.standardError, closeAfterSpawningProcess: false))
            let status: String
            switch result.terminationStatus {
            case .exited(0): return nil
            case .exited(let code): status = "exited with \(code)"
            case .signaled(let signal): status = Task.isCancelled
                ? "did not end within \(DurationText.spoken(Self.timeLimit)) and was stopped" : "was killed by signal \(signal)"
            }
            return "\(name) for \(file.relativePath) \(status)"
        } catch {
            return "\(name) for \(file.relativePath) could not run: \(error)"
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
