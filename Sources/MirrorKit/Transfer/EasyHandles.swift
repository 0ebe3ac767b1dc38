import CCurl

/// Easy handles of ended transfers, kept for the next ones, as libcurl advises: a handle made
/// and freed for every file costs its allocations each time, one reset keeps them.
///
/// A handle comes back reset (`curl_easy_reset`): no option of the transfer that had it (its URL,
/// its credentials, its callbacks' context, which points at a transfer that is gone) reaches the
/// next. What a reset keeps is the connection and DNS caches, which belong to the multi handle
/// here anyway, and no cookies: mirror never turns the cookie engine on.
///
/// Lives on the engine thread only, like the transfers that borrow its handles. There are never
/// more handles than transfers ran at once, so keeping every returned one costs no more memory
/// than the busiest moment did; `limit` bounds it still.
final class EasyHandles {
    private var idle: [UnsafeMutableRawPointer] = []
    private let limit: Int

    init(limit: Int = 64) {
        self.limit = limit
    }

    deinit {
        for easy in idle { curl_easy_cleanup(easy) }
    }

    /// A handle with every option at its default; nil when libcurl cannot make one.
    func take() -> UnsafeMutableRawPointer? {
        idle.popLast() ?? curl_easy_init()
    }

    /// Takes back a handle no transfer uses any more (it is out of the multi handle).
    func giveBack(_ easy: UnsafeMutableRawPointer) {
        guard idle.count < limit else {
            curl_easy_cleanup(easy)
            return
        }
        curl_easy_reset(easy)
        idle.append(easy)
    }

    /// Handles waiting for a transfer.
    var idleCount: Int { idle.count }
}
