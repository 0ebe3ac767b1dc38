import CCurl
import FoundationEssentials
import Synchronization

/// The multi handle, shared between the engine thread and the threads that post commands.
///
/// `@unchecked Sendable` is sound here: the only libcurl call made off the engine thread is
/// `curl_multi_wakeup`, which libcurl documents as callable from any thread, and the mailbox makes
/// it under the same lock the engine thread takes before `curl_multi_cleanup`, so no wakeup can
/// reach a freed handle.
struct MultiHandle: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
}

/// The command inbox of the engine thread.
final class EngineMailbox: Sendable {
    private struct State {
        var commands: [EngineCommand] = []
        var isClosed = false
        var wakeupsSent = 0
    }

    let multi: MultiHandle
    private let state = Mutex(State())
    /// Told of each transfer whose pause cannot be applied (see ``CurlTransfer/isMultiplexed``).
    let holdRefusals = Mutex<(@Sendable (TransferID) -> Void)?>(nil)
    /// Transfers whose body arrives on an HTTP/2 connection: no pause holds them.
    let multiplexed = Mutex<Set<TransferID>>([])

    init() {
        // Before any multi handle: libcurl would otherwise set itself up without our OpenSSL flags.
        CurlGlobal.initializeOnce()
        guard let pointer = curl_multi_init() else { fatalError("curl_multi_init failed") }
        // The default since 7.62, said out loud: HTTP/2 streams share a connection.
        mirror_curl_multi_setopt_long(pointer, CURLMOPT_PIPELINING, mirror_curlpipe_multiplex)
        multi = MultiHandle(pointer: pointer)
    }

    /// Wakeups sent to the engine thread so far: one per batch of commands it takes, not one per
    /// command.
    var wakeupsSent: Int { state.withLock { $0.wakeupsSent } }

    func post(_ command: EngineCommand) {
        let rejected: EngineCommand? = state.withLock { state in
            guard !state.isClosed else { return command }
            // Commands waiting means a wakeup was sent after the engine thread last took them, and
            // it takes them all after the poll that wakeup ends: another one would cost a system
            // call here and an empty turn of its loop there.
            let wakeupPending = !state.commands.isEmpty
            state.commands.append(command)
            if !wakeupPending {
                curl_multi_wakeup(multi.pointer)
                state.wakeupsSent += 1
            }
            return nil
        }
        switch rejected {
        case .start(let start)?:
            start.continuation.resume(throwing: TransferError(url: start.request.url, reason: .cancelled))
        case .shutdown(let done?)?:
            done.resume()
        default:
            break
        }
    }

    func takeAll() -> [EngineCommand] {
        state.withLock { state in
            defer { state.commands.removeAll(keepingCapacity: true) }
            return state.commands
        }
    }

    /// Closes the inbox and frees the multi handle; returns commands that arrived meanwhile.
    func close() -> [EngineCommand] {
        state.withLock { state in
            state.isClosed = true
            curl_multi_cleanup(multi.pointer)
            defer { state.commands.removeAll() }
            return state.commands
        }
    }
}

/// The engine thread's loop: commands in, `curl_multi_perform`, completions out, `curl_multi_poll`.
final class EngineLoop {
    private let mailbox: EngineMailbox
    private let configuration: TransferEngine.Configuration
    private var multi: UnsafeMutableRawPointer { mailbox.multi.pointer }
    private var transfers: [TransferID: CurlTransfer] = [:]
    private var byHandle: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Transfers asked to pause, known or not yet: a pause can arrive before its transfer starts,
    /// or between two attempts of one download (which share the id).
    private var pausedIDs: Set<TransferID> = []
    private let bandwidth: BandwidthBudget?

    init(mailbox: EngineMailbox, configuration: TransferEngine.Configuration) {
        self.mailbox = mailbox
        self.configuration = configuration
        bandwidth = configuration.maxBytesPerSecond.map { BandwidthBudget(bytesPerSecond: $0) }
    }

    func run() {
        while true {
            for command in mailbox.takeAll() {
                guard case .shutdown(let done) = command else {
                    handle(command)
                    continue
                }
                shutDown()
                done?.resume()
                return
            }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            collectFinished()
            curl_multi_poll(multi, nil, 0, pollTimeoutMilliseconds(), nil)
            unthrottle()
        }
    }

    /// Sleep until the next command or socket event; while transfers wait for bandwidth, only
    /// until the budget has tokens again.
    private func pollTimeoutMilliseconds() -> Int32 {
        guard let bandwidth, transfers.values.contains(where: \.isThrottled) else { return 1000 }
        return Int32(clamping: min(max(bandwidth.waitUntilAvailable.milliseconds, 1), 1000))
    }

    private func unthrottle() {
        guard let bandwidth, bandwidth.waitUntilAvailable == .zero else { return }
        for transfer in transfers.values where transfer.isThrottled {
            transfer.isThrottled = false
            if !transfer.isHeld { letGo(transfer) }
        }
    }

    /// Unpauses a transfer libcurl holds paused, and only such a one.
    private func letGo(_ transfer: CurlTransfer) {
        guard transfer.isCurlPaused else { return }
        transfer.isCurlPaused = false
        curl_easy_pause(transfer.easy, mirror_curlpause_cont)
    }

    /// Carries out one command other than shutdown.
    private func handle(_ command: EngineCommand) {
        switch command {
        case .start(let start):
            begin(start)
        case .cancel(let id):
            pausedIDs.remove(id)
            guard let transfer = transfers[id] else { break }
            detach(transfer)
            transfer.cancel()
        case .pause(let id):
            pausedIDs.insert(id)
            guard let transfer = transfers[id] else { break }
            // Held by its write callback at its next bytes, if it is not on an HTTP/2 connection.
            transfer.isPauseRequested = true
        case .resume(let id):
            pausedIDs.remove(id)
            guard let transfer = transfers[id], transfer.isPauseRequested else { break }
            transfer.isPauseRequested = false
            if !transfer.isThrottled { letGo(transfer) }
        case .shutdown:
            break
        }
    }

    private func begin(_ start: EngineCommand.Start) {
        if start.cancellation.isSet {
            start.continuation.resume(throwing: TransferError(url: start.request.url, reason: .cancelled))
            return
        }
        let transfer: CurlTransfer
        do {
            transfer = try CurlTransfer(
                id: start.id, request: start.request, configuration: configuration,
                bandwidth: bandwidth, progress: start.progress, onBodyStart: start.onBodyStart, continuation: start.continuation)
        } catch {
            start.continuation.resume(throwing: error)
            return
        }
        transfers[start.id] = transfer
        byHandle[transfer.easy] = transfer
        let mailbox = mailbox
        transfer.onHoldRefused = { id in mailbox.holdRefusals.withLock { $0 }?(id) }
        transfer.onMultiplexed = { id in _ = mailbox.multiplexed.withLock { $0.insert(id) } }
        // Held from its first byte: its write callback pauses it until resumed.
        transfer.isPauseRequested = pausedIDs.contains(start.id)
        curl_multi_add_handle(multi, transfer.easy)
    }

    private func collectFinished() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE,
                  let transfer = byHandle[message.pointee.easy_handle]
            else { continue }
            let code = message.pointee.data.result
            detach(transfer)
            transfer.finish(code: code)
        }
    }

    private func detach(_ transfer: CurlTransfer) {
        _ = mailbox.multiplexed.withLock { $0.remove(transfer.id) }
        curl_multi_remove_handle(multi, transfer.easy)
        transfers[transfer.id] = nil
        byHandle[transfer.easy] = nil
    }

    private func shutDown() {
        for transfer in transfers.values {
            detach(transfer)
            transfer.cancel()
        }
        for command in mailbox.close() {
            switch command {
            case .start(let start):
                start.continuation.resume(throwing: TransferError(url: start.request.url, reason: .cancelled))
            case .shutdown(let done?):
                done.resume()
            default:
                break
            }
        }
    }
}
