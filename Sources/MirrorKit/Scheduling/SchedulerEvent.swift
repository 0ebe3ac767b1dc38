import Synchronization

/// Something that happened to a scheduled download.
enum SchedulerEvent: Sendable, Equatable {
    case queued(url: String, forced: Bool)
    /// A transfer began. What an earlier attempt left is known once the body starts: the first
    /// `progress` counts it.
    case started(url: String, forced: Bool)
    case progress(url: String, completed: Int64, total: Int64?)
    case paused(url: String)
    case resumed(url: String)
    /// Another caller joined an item already known; `callers` counts them all.
    case coalesced(url: String, callers: Int, forced: Bool)
    /// Soft-cancelled with `bytes` of partial data kept.
    case suspended(url: String, bytes: Int64)
    /// Hard-cancelled over the suspended budget; its partial data is deleted.
    case purged(url: String)
    case completed(url: String, bytes: Int64)
    case failed(url: String, message: String)

    var url: String {
        switch self {
        case .queued(let url, _), .started(let url, _), .progress(let url, _, _), .paused(let url),
             .resumed(let url), .coalesced(let url, _, _), .suspended(let url, _),
             .purged(let url), .completed(let url, _), .failed(let url, _):
            url
        }
    }
}

/// Fans events out to any number of observers, each with its own stream.
final class EventHub: Sendable {
    private let observers = Mutex<[Int: AsyncStream<SchedulerEvent>.Continuation]>([:])
    private let nextKey = Atomic<Int>(0)

    func stream() -> AsyncStream<SchedulerEvent> {
        let (stream, continuation) = AsyncStream<SchedulerEvent>.makeStream(bufferingPolicy: .unbounded)
        let key = nextKey.add(1, ordering: .relaxed).newValue
        continuation.onTermination = { [weak self] _ in
            _ = self?.observers.withLock { $0.removeValue(forKey: key) }
        }
        observers.withLock { $0[key] = continuation }
        return stream
    }

    func emit(_ event: SchedulerEvent) {
        observers.withLock { observers in
            for continuation in observers.values { continuation.yield(event) }
        }
    }

    func finish() {
        let all = observers.withLock { observers in
            defer { observers.removeAll() }
            return Array(observers.values)
        }
        all.forEach { $0.finish() }
    }
}
