import Foundation

/// A running mirror's live state, kept in `.mirror/status.json` so that `mirror status` in another
/// shell can show it.
public struct RunStatus: Codable, Sendable, Equatable {
    /// What is being mirrored, e.g. `tag cats`.
    public var source: String
    public var pid: Int32
    public var startedAt: Date
    public var updatedAt: Date
    public var scheduler: SchedulerStatus

    static let fileName = "status.json"

    /// The status the running mirror last wrote, if one is running and wrote one.
    public static func read(in directory: MirrorDirectory) -> RunStatus? {
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

    /// Rewrites the status every second until cancelled, passing every fifth snapshot to `log`,
    /// then removes the file.
    static func keepWriting(
        source: String, scheduler: DownloadScheduler, directory: MirrorDirectory,
        log: @Sendable (SchedulerStatus) -> Void = { _ in }
    ) async {
        let startedAt = Date()
        var round = 0
        while !Task.isCancelled {
            let snapshot = await scheduler.status()
            RunStatus(source: source, pid: getpid(), startedAt: startedAt, updatedAt: Date(), scheduler: snapshot)
                .write(in: directory)
            if round % 5 == 4 { log(snapshot) }
            round += 1
            try? await Task.sleep(for: .seconds(1))
        }
        directory.stateFolder.remove(fileName)
    }
}

extension DownloadState: CodingKeyRepresentable {}
