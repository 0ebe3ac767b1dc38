import Dispatch
import Synchronization

/// The pause timers of a run: one dispatch timer, armed for the earliest deadline, serves them
/// all. Nearly every pause is stopped long before its grace (the forced file ends first), so
/// starting and stopping one must cost no thread: a task per pause woke one and, once
/// cancelled, kept its sleep until the grace was out (swiftlang/swift#60441); a dispatch source
/// per pause woke the timer queue's thread for every cancel.
final class PauseTimers: Sendable {
    private struct Entry {
        var deadline: ContinuousClock.Instant
        var id: Int
    }

    private struct State {
        var waiting: [Int: @Sendable () -> Void] = [:]
        /// Deadlines in order, oldest first from `head`; a stopped timer's entry stays until its
        /// deadline passes (they come in the order they were started, so it soon does).
        var deadlines: [Entry] = []
        var head = 0
        var nextID = 0
        var armedFor: ContinuousClock.Instant?
        /// Behind the lock: a dispatch source is not Sendable, and only the lock's holder arms it.
        var source: (any DispatchSourceTimer)?
    }

    private let state = Mutex(State())

    init() {
        state.withLock { state in
            let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "mirror.pause-timers"))
            source.setEventHandler { [weak self] in self?.fireDue() }
            source.activate()
            state.source = source
        }
    }

    deinit {
        state.withLock { $0.source?.cancel() }
    }

    /// Runs `fire` once `after` has passed, unless the returned stopper is called first.
    func start(after: Duration, _ fire: @escaping @Sendable () -> Void) -> Stopper {
        let deadline = ContinuousClock.now + after
        let id = state.withLock { state -> Int in
            state.nextID += 1
            state.waiting[state.nextID] = fire
            // From the back: deadlines of one grace arrive in order, so this is one comparison.
            var index = state.deadlines.endIndex
            while index > state.head, state.deadlines[index - 1].deadline > deadline { index -= 1 }
            state.deadlines.insert(Entry(deadline: deadline, id: state.nextID), at: index)
            if state.armedFor.map({ deadline < $0 }) ?? true { arm(for: deadline, in: &state) }
            return state.nextID
        }
        return Stopper { [weak self] in
            _ = self?.state.withLock { $0.waiting.removeValue(forKey: id) }
        }
    }

    /// Timers waiting to fire.
    var count: Int { state.withLock { $0.waiting.count } }

    private func fireDue() {
        let now = ContinuousClock.now
        let due = state.withLock { state -> [@Sendable () -> Void] in
            var due: [@Sendable () -> Void] = []
            while state.head < state.deadlines.count, state.deadlines[state.head].deadline <= now {
                if let fire = state.waiting.removeValue(forKey: state.deadlines[state.head].id) { due.append(fire) }
                state.head += 1
            }
            if state.head > 1024, state.head * 2 > state.deadlines.count {
                state.deadlines.removeFirst(state.head)
                state.head = 0
            }
            state.armedFor = nil
            // The next live deadline; stopped ones before it are dropped on the way.
            while state.head < state.deadlines.count, state.waiting[state.deadlines[state.head].id] == nil {
                state.head += 1
            }
            if state.head < state.deadlines.count { arm(for: state.deadlines[state.head].deadline, in: &state) }
            return due
        }
        for fire in due { fire() }
    }

    private func arm(for deadline: ContinuousClock.Instant, in state: inout State) {
        state.armedFor = deadline
        // At most a day ahead (a longer timer is re-armed when that passes): no overflow.
        let (seconds, attoseconds) = (deadline - ContinuousClock.now).components
        let nanoseconds = max(0, Int(min(seconds, 86_400)) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        state.source?.schedule(deadline: .now() + .nanoseconds(nanoseconds))
    }
}
