import FoundationEssentials
import Glibc

/// A running mirror's live state, kept in `.mirror/status.json` so that `mirror status` in another
/// shell can show it.
package struct RunStatus: Codable, Sendable, Equatable {
    /// What is being mirrored, e.g. `tag cats`.
    package var source: String
    package var pid: Int32
    package var startedAt: Date
    var updatedAt: Date
    /// What the run has done so far, and the transfers in flight.
    package var progress: RunProgress

    static let fileName = "status.json"

    /// The status the running mirror last wrote, if one is running and wrote one.
    static func read(in directory: MirrorDirectory) -> RunStatus? {
        guard let bytes = directory.stateFolder.contents(of: fileName) else { return nil }
        let data = Data(bytes)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(RunStatus.self, from: data)
    }

    func write(in directory: MirrorDirectory) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { return }
        try? directory.stateFolder.replaceContents(of: Self.fileName, with: data, durable: false)
    }

    /// Rewrites the status every second until cancelled, passing every fifth look to `log`, then
    /// removes the file. The source is the one the driver is at (`run` until it starts on one).
    package static func keepWriting(
        run: String, tracker: ProgressTracker, driver: MirrorDriver, directory: MirrorDirectory,
        log: @Sendable (RunProgress) -> Void = { _ in }
    ) async {
        let startedAt = Date()
        var round = 0
        while !Task.isCancelled {
            let snapshot = await tracker.refresh(from: driver)
            RunStatus(source: snapshot.source ?? run, pid: getpid(), startedAt: startedAt, updatedAt: Date(), progress: snapshot)
                .write(in: directory)
            if round % 5 == 4 { log(snapshot) }
            round += 1
            try? await Task.sleep(for: .seconds(1))
        }
        directory.stateFolder.remove(fileName)
    }
}

extension DownloadState: CodingKeyRepresentable {}
