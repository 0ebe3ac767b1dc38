import Synchronization

/// What reaches the scheduler from outside its actor: callers arriving and leaving, and what
/// transfers and timers report. Posted synchronously, from any thread, in the order it happened.
enum SchedulerMail: Sendable {
    case schedule(url: String, forced: Bool, expectedSize: ExpectedSize?, held: HeldVersion?, caller: CallerTicket)
    case leave(url: String, caller: CallerTicket)
    /// Transfer `id` of `url` started or stopped receiving; its ``TransferReport`` holds which.
    case receivingChanged(url: String, id: TransferID)
    case finished(url: String, id: TransferID, Result<FetchedFile, DownloadError>)
    case pauseExpired(url: String, id: TransferID, pause: UInt64)
    /// The transfer was asked to pause and goes on receiving (an HTTP/2 stream).
    case holdRefused(id: TransferID)
    /// A host's limit went up (see ``DownloadTransport/onLimitRaised(_:)``).
    case limitRaised
}

/// The scheduler's mailbox. Whoever posts into an inbox nobody has promised to drain is told to
/// arrange a drain; a drain that finds it empty releases the promise. So mail never waits
/// unseen, and the scheduler knows at every moment whether anything is left to carry out.
final class SchedulerInbox: Sendable {
    private struct State {
        var mail: [SchedulerMail] = []
        var drainPromised = false
    }

    private let state = Mutex(State())

    /// Adds `mail`; true when the caller must arrange a drain.
    func post(_ mail: SchedulerMail) -> Bool {
        state.withLock { state in
            state.mail.append(mail)
            defer { state.drainPromised = true }
            return !state.drainPromised
        }
    }

    /// The actor drains now: mail posted meanwhile needs no drain of its own.
    func promiseDrain() {
        state.withLock { $0.drainPromised = true }
    }

    /// Everything posted so far, oldest first; when there is nothing, the promise is released.
    func take() -> [SchedulerMail] {
        state.withLock { state in
            if state.mail.isEmpty { state.drainPromised = false }
            defer { state.mail = [] }
            return state.mail
        }
    }
}

/// One call of ``DownloadScheduler/schedule(_:forced:expectedSize:held:)``: the continuation its
/// answer resumes, and whether the caller left before the scheduler heard of it (its leave can be
/// posted from another thread before its arrival).
final class CallerTicket: Sendable {
    typealias Continuation = CheckedContinuation<FetchedFile, any Error>

    private struct State {
        var continuation: Continuation?
        var leftEarly = false
    }

    let id: CallerID
    private let state = Mutex(State())

    init(id: CallerID) {
        self.id = id
    }

    func attach(_ continuation: Continuation) {
        state.withLock { $0.continuation = continuation }
    }

    /// Hands the continuation over, to the scheduler that keeps it until it answers.
    func takeContinuation() -> Continuation? {
        state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }
    }

    /// The caller left before the scheduler heard of it: its arrival answers it at once.
    func markLeftEarly() {
        state.withLock { $0.leftEarly = true }
    }

    var leftEarly: Bool { state.withLock { $0.leftEarly } }
}
