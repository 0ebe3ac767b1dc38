import CCurl
import COpenSSL
import FoundationEssentials
import Glibc
import Synchronization

/// Identifies one transfer to ``TransferEngine/pause(_:)`` and ``TransferEngine/resume(_:)``.
package struct TransferID: Hashable, Sendable, CustomStringConvertible {
    let rawValue: UInt64
    private static let counter = Atomic<UInt64>(0)

    /// A new identifier, unique in this process.
    static func next() -> TransferID {
        TransferID(rawValue: counter.add(1, ordering: .relaxed).newValue)
    }

    package var description: String { "#\(rawValue)" }
}

/// Runs HTTP transfers on libcurl's multi interface.
///
/// One thread owns the multi handle and every easy handle: libcurl allows a handle on one thread
/// at a time, and pausing works only from the thread that drives the transfer. Callers talk to that
/// thread through a locked command inbox and `curl_multi_wakeup`. Bodies stream to disk through a
/// 1 MiB buffer, so memory stays flat whatever the size of the file.
package final class TransferEngine: Sendable {
    /// Settings shared by every transfer of one engine.
    package struct Configuration: Sendable {
        var userAgent: String
        var connectTimeout: Duration
        /// A transfer slower than `lowSpeedLimit` bytes per second for `lowSpeedSeconds` is
        /// aborted as stalled (a paused transfer is exempt).
        var lowSpeedLimit: Int
        var lowSpeedSeconds: Int
        var maxRedirects: Int
        /// The most bytes per second all transfers together may receive; nil for no limit.
        var maxBytesPerSecond: Int64?
        /// A PEM file of the certificate authorities to trust instead of the system's.
        var certificateAuthorities: String?
        /// What requests authenticate with (a private feed's password, netrc's entries).
        var credentials: CredentialStore
        /// Where every exchange is archived as WARC records (`--warc`); nil for nowhere.
        package var archive: WARCArchive?

        init(
            userAgent: String = "mirror/\(MirrorVersion.number)",
            connectTimeout: Duration = .seconds(15),
            lowSpeedLimit: Int = 1024,
            lowSpeedSeconds: Int = 30,
            maxRedirects: Int = 5,
            maxBytesPerSecond: Int64? = nil,
            certificateAuthorities: String? = nil,
            credentials: CredentialStore = CredentialStore()
        ) {
            self.userAgent = userAgent
            self.connectTimeout = connectTimeout
            self.lowSpeedLimit = lowSpeedLimit
            self.lowSpeedSeconds = lowSpeedSeconds
            self.maxRedirects = maxRedirects
            self.maxBytesPerSecond = maxBytesPerSecond
            self.certificateAuthorities = certificateAuthorities
            self.credentials = credentials
        }
    }

    let configuration: Configuration
    private let mailbox: EngineMailbox

    /// What this engine's requests authenticate with; a source adds its URL's credentials here.
    package var credentials: CredentialStore { configuration.credentials }

    package init(configuration: Configuration = Configuration()) {
        CurlGlobal.initializeOnce()
        self.configuration = configuration
        mailbox = EngineMailbox()
        let mailbox = self.mailbox
        DedicatedThread.start(named: "mirror-engine") {
            EngineLoop(mailbox: mailbox, configuration: configuration).run()
        }
    }

    deinit {
        mailbox.post(.shutdown(nil))
    }

    /// Cancels every transfer, frees the multi handle and ends the engine thread, returning once
    /// it has: call it before the process exits, so no libcurl call runs during exit. Transfers
    /// started afterwards fail at once as cancelled.
    package func shutDown() async {
        await withCheckedContinuation { continuation in
            mailbox.post(.shutdown(continuation))
        }
    }

    /// Performs `request` and returns the final response, whatever its status.
    ///
    /// - Parameters:
    ///   - progress: called on the engine thread as the body arrives; keep it cheap.
    ///   - onBodyStart: called on the engine thread once a file destination accepts the body, before
    ///     its first byte is written: the moment to record the response's validators.
    /// - Throws: ``TransferError`` when no complete response arrived: a network fault, a body
    ///   cut short, a mismatched range, a failed write, or cancellation of the calling task.
    func perform(
        _ request: TransferRequest,
        id: TransferID = .next(),
        progress: (@Sendable (TransferProgress) -> Void)? = nil,
        onBodyStart: (@Sendable (TransferResponse) -> Void)? = nil
    ) async throws -> TransferResponse {
        // A new exchange waits while the archive is behind (a disk slower than the network): its
        // callers slow down, the transfers already running do not stall.
        await configuration.archive?.waitForRoom()
        let cancellation = CancellationFlag()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let start = EngineCommand.Start(
                    id: id, request: request, progress: progress, onBodyStart: onBodyStart,
                    continuation: continuation, cancellation: cancellation)
                mailbox.post(.start(start))
            }
        } onCancel: {
            cancellation.set()
            mailbox.post(.cancel(id))
        }
    }

    /// Stops receiving for a running transfer; it keeps its connection. Meant for short pauses:
    /// a server drops a connection it cannot send on after a while (nginx: 60 s).
    func pause(_ id: TransferID) {
        mailbox.post(.pause(id))
    }

    /// Lets a paused transfer receive again.
    func resume(_ id: TransferID) {
        mailbox.post(.resume(id))
    }

    /// Tells `handler` (on the engine's thread) of each transfer asked to pause that goes on
    /// receiving all the same: a stream of an HTTP/2 connection, which is not paused. Its caller
    /// must count it as running.
    func onHoldRefused(_ handler: @escaping @Sendable (TransferID) -> Void) {
        mailbox.holdRefusals.withLock { $0 = handler }
    }

    /// Whether transfer `id`'s body arrives on an HTTP/2 connection (known from its first bytes):
    /// a pause does not hold it.
    func isMultiplexed(_ id: TransferID) -> Bool {
        mailbox.multiplexed.withLock { $0.contains(id) }
    }
}

/// Set once when the caller's task is cancelled, so a start that reaches the engine after its
/// cancel command still ends at once.
final class CancellationFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

enum EngineCommand: Sendable {
    /// A class: the command passes through the mailbox and the loop by copy, and a copy of its
    /// request and callbacks retained each of their references.
    final class Start: Sendable {
        let id: TransferID
        let request: TransferRequest
        let progress: (@Sendable (TransferProgress) -> Void)?
        let onBodyStart: (@Sendable (TransferResponse) -> Void)?
        let continuation: CheckedContinuation<TransferResponse, any Error>
        let cancellation: CancellationFlag

        init(
            id: TransferID, request: TransferRequest, progress: (@Sendable (TransferProgress) -> Void)?,
            onBodyStart: (@Sendable (TransferResponse) -> Void)?, continuation: CheckedContinuation<TransferResponse, any Error>,
            cancellation: CancellationFlag
        ) {
            self.id = id
            self.request = request
            self.progress = progress
            self.onBodyStart = onBodyStart
            self.continuation = continuation
            self.cancellation = cancellation
        }
    }

    case start(Start)
    case cancel(TransferID)
    case pause(TransferID)
    case resume(TransferID)
    /// Ends the engine; the continuation, if any, resumes once the thread is done with libcurl.
    case shutdown(CheckedContinuation<Void, Never>?)
}

enum CurlGlobal {
    private static let initialized: Bool = {
        // NOSIGNAL keeps libcurl from ignoring SIGPIPE itself, and OpenSSL can raise it on a
        // closed socket: ignore it process-wide instead.
        signal(SIGPIPE, SIG_IGN)
        mirror_openssl_skip_atexit_cleanup()
        return curl_global_init(mirror_curl_global_all) == CURLE_OK
    }()

    static func initializeOnce() {
        precondition(initialized, "curl_global_init failed")
    }
}
