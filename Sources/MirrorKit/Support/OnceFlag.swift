import Synchronization

/// True the first time it is asked, false ever after, from any thread: for what a run says once.
final class OnceFlag: Sendable {
    private let taken = Atomic<Bool>(false)

    /// Whether this is the first call.
    func isFirst() -> Bool {
        !taken.exchange(true, ordering: .relaxed)
    }
}
