import CMirrorSystem
import Glibc

/// A thread of its own for a loop that blocks (the curl engine's), outside Swift's cooperative
/// pool; Foundation's `Thread` without Foundation.
enum DedicatedThread {
    /// Starts `body` on a new, detached thread named `name` (at most 15 bytes, the kernel's limit).
    static func start(named name: String, _ body: @escaping @Sendable () -> Void) {
        let work = Unmanaged.passRetained(Work(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { argument in
            let work = Unmanaged<Work>.fromOpaque(argument!).takeRetainedValue()
            mirror_name_this_thread(work.name)
            work.body()
            return nil
        }, work)
        precondition(result == 0, "cannot start the thread \(name): error \(result)")
        pthread_detach(thread)
    }

    private final class Work: Sendable {
        let name: String
        let body: @Sendable () -> Void

        init(name: String, body: @escaping @Sendable () -> Void) {
            precondition(name.utf8.count <= 15, "a thread's name is at most 15 bytes: \(name)")
            self.name = name
            self.body = body
        }
    }
}
