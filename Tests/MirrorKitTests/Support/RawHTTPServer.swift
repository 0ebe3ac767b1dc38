import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A server on 127.0.0.1 that answers every request with the same bytes, exactly as given: for
/// the answers a real HTTP stack will not send (NIO rewrites a `Transfer-Encoding` to `chunked`).
/// Runs on a thread of its own until closed.
final class RawHTTPServer: Sendable {
    let port: Int
    private let listener: Int32
    private let stopped = Atomic<Bool>(false)

    init(answer: [UInt8]) throws {
        let (fd, port) = try Loopback.bind(listening: true)
        listener = fd
        self.port = port
        Thread.detachNewThread { [self] in
            // The thread closes the socket it accepts on, once told to stop: closed by `close()`,
            // its number could go to another test's socket before `accept` is called again.
            defer { Glibc.close(listener) }
            while !stopped.load(ordering: .acquiring) {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { continue }
                var patience = timeval(tv_sec: 5, tv_usec: 0)
                setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &patience, socklen_t(MemoryLayout<timeval>.size))
                // The request head, then the answer; closing ends the body if nothing else does.
                var request = [UInt8](repeating: 0, count: 64 << 10)
                var received = 0
                while received < request.count, !request[..<received].ends(with: Array("\r\n\r\n".utf8)) {
                    let count = read(connection, &request[received], request.count - received)
                    guard count > 0 else { break }
                    received += count
                }
                _ = answer.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                Glibc.close(connection)
            }
        }
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Stops answering: `accept` fails on the shut-down socket, and the thread ends.
    func close() {
        stopped.store(true, ordering: .releasing)
        shutdown(listener, Int32(SHUT_RDWR))
    }
}

/// A TCP socket bound to a free port on 127.0.0.1.
enum Loopback {
    /// The socket and its port; listening when `listening`. The caller closes the socket.
    static func bind(listening: Bool) throws -> (descriptor: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, length) == 0 && (!listening || listen(fd, 16) == 0) && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(fd)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}

private extension ArraySlice where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self.suffix(suffix.count)) == suffix
    }
}
