import Foundation
import Logging

/// A downloaded file, complete and verified, waiting in the partial store to be committed.
public struct FetchedFile: Sendable {
    public var url: String
    public var path: String
    public var length: Int64
}

/// Fetches one URL into the partial store and checks that what arrived is whole.
public struct Downloader: Sendable {
    let engine: TransferEngine
    let partials: PartialStore
    let logger: Logger

    public init(engine: TransferEngine, partials: PartialStore, logger: Logger) {
        self.engine = engine
        self.partials = partials
        self.logger = logger
    }

    /// Downloads `url`; `expectedSize`, when known, must match the bytes received.
    public func fetch(
        _ url: String, expectedSize: Int64? = nil,
        progress: (@Sendable (TransferProgress) -> Void)? = nil
    ) async throws(DownloadError) -> FetchedFile {
        let path = partials.partPath(for: url)
        let response: TransferResponse
        do {
            response = try await engine.perform(
                TransferRequest(url: url, destination: .file(path: path, offset: 0)), progress: progress)
        } catch let error as TransferError {
            throw DownloadError(url: url, reason: .transfer(error.reason))
        } catch {
            throw DownloadError(url: url, reason: .transfer(.cancelled))
        }
        guard response.isSuccess else { throw DownloadError(url: url, reason: .httpStatus(response.status)) }
        if let expectedSize, expectedSize != response.fileLength {
            partials.remove(url)
            throw DownloadError(url: url, reason: .sizeMismatch(expected: expectedSize, actual: response.fileLength))
        }
        logger.debug("fetched \(url) (\(response.fileLength) bytes)")
        return FetchedFile(url: url, path: path, length: response.fileLength)
    }
}
