import ArgumentParser
import Foundation
import MirrorKit

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show what a mirror directory's run is doing, or the partial downloads it keeps.")

    @Option(name: .shortAndLong, help: "The mirror directory.")
    var out: String

    func run() throws {
        let root = URL(fileURLWithPath: out)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.appendingPathComponent(".mirror").path, isDirectory: &isDirectory),
              isDirectory.boolValue
        else {
            throw ExitStatus.fail("\(out) is not a mirror directory (no .mirror inside)", status: ExitStatus.noInput)
        }
        let directory: MirrorDirectory
        do {
            directory = try MirrorDirectory(root: root)
        } catch {
            throw ExitStatus.fail(error.description, status: ExitStatus.of(error))
        }
        // Read the status a run writes, rather than probe its lock: a probe could make a run that
        // starts at that instant think another holds the directory.
        if let status = RunStatus.read(in: directory), kill(status.pid, 0) == 0 || errno == EPERM {
            printRunning(status)
        } else {
            print("no run in progress")
            printPartials(directory)
        }
    }

    private func printRunning(_ status: RunStatus) {
        let started = ISO8601DateFormatter().string(from: status.startedAt)
        print("running: \(status.source), pid \(status.pid), since \(started)")
        print("downloads: \(status.scheduler.summaryLine)")
        for item in status.scheduler.items where item.state != .waiting {
            let percent = item.percent.map { String(format: "%5.1f%%", $0) } ?? "    ?%"
            print("  \(item.state.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0)) \(percent) \(item.isForced ? "forced " : "       ")\(item.url)")
        }
        let waiting = status.scheduler.items.count { $0.state == .waiting }
        if waiting > 0 { print("  … and \(waiting) waiting") }
    }

    private func printPartials(_ directory: MirrorDirectory) {
        guard let partials = try? PartialStore(directory: directory.stateDirectory.appendingPathComponent("partials")) else {
            return
        }
        let held = partials.heldPartials()
        guard !held.isEmpty else { return }
        print("partial downloads kept for the next run:")
        for (record, length) in held {
            let percent = record.totalLength.flatMap { $0 > 0 ? Double(length) * 100 / Double($0) : nil }
                .map { String(format: "%5.1f%%", $0) } ?? "    ?%"
            print("  \(percent) \(MirrorSummary.formatBytes(length).padding(toLength: 9, withPad: " ", startingAt: 0)) \(record.url)")
        }
    }
}
