import Foundation

/// Debian's nginx serving a directory over HTTPS with HTTP/2, under a certificate made for the
/// test: what Imgur's CDN speaks, which the fixture server does not. Tests that need it are
/// skipped where nginx is not installed (CI installs it).
final class NginxServer: Sendable {
    static let binary = ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var isAvailable: Bool { binary != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") }

    let root: URL
    let port: Int
    /// The certificate to trust (`TransferEngine.Configuration.certificateAuthorities`).
    let certificate: String
    private let work: URL
    private let process: ChildProcess.Started

    var baseURL: String { "https://127.0.0.1:\(port)" }

    /// Starts nginx on a thread of its own (see ``TestSupport/apart(_:)``).
    static func start() async throws -> NginxServer {
        try await TestSupport.apart { try NginxServer() }
    }

    /// Starts nginx on a free port; `root` is where the files it serves go.
    init() throws {
        work = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-\(UUID().uuidString)")
        root = work.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: work.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        // nginx's workers may run as another user: they must be able to read what they serve.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: work.path)
        certificate = work.appendingPathComponent("cert.pem").path
        let key = work.appendingPathComponent("key.pem").path
        try Self.run("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", certificate,
        ])
        // The free port may be taken by someone else before nginx binds it: then try another.
        var attempt = 0
        while true {
            attempt += 1
            let port = try Self.freePort()
            let process = try Self.startNginx(work: work, root: root, port: port, certificate: certificate, key: key)
            if try Self.waitForPort(port, while: process) {
                self.port = port
                self.process = process
                return
            }
            _ = process.waitBlocking()
            guard attempt < 3 else {
                let log = (try? String(contentsOf: work.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
                throw EventuallyTimeout(description: "nginx did not start: \(log.suffix(500))")
            }
        }
    }

    private static func startNginx(work: URL, root: URL, port: Int, certificate: String, key: String) throws -> ChildProcess.Started {
        let config = """
            worker_processes 1;
            pid \(work.path)/nginx.pid;
            error_log \(work.path)/error.log;
            daemon off;
            events { worker_connections 1024; }
            http {
                log_format test '$request_uri $status $server_protocol $connection $msec $request_time';
                # A CDN that answers 429 past a request every twelve seconds (two at once allowed).
                limit_req_zone $server_addr zone=throttle:1m rate=5r/m;
                limit_req_status 429;
                access_log \(work.path)/access.log test;
                client_body_temp_path \(work.path)/tmp/body;
                proxy_temp_path \(work.path)/tmp/proxy;
                fastcgi_temp_path \(work.path)/tmp/fastcgi;
                uwsgi_temp_path \(work.path)/tmp/uwsgi;
                scgi_temp_path \(work.path)/tmp/scgi;
                server {
                    listen 127.0.0.1:\(port) ssl http2;
                    ssl_certificate \(certificate);
                    ssl_certificate_key \(key);
                    root \(root.path);
                    # A CDN that holds each response to a rate: files under /slow/.
                    location /slow/ { limit_rate 512k; }
                    location /throttled/ { limit_req zone=throttle burst=1 nodelay; limit_rate 256k; }
                }
            }
            """
        let configPath = work.appendingPathComponent("nginx.conf").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        let process = try ChildProcess(executable: binary!, arguments: ["-c", configPath, "-p", work.path]).start()
        return process
    }

    deinit {
        process.terminate()
        _ = process.waitBlocking()
        try? FileManager.default.removeItem(at: work)
    }

    /// Adds a file of `size` bytes (a pattern that differs per file) and returns its bytes.
    @discardableResult
    func addFile(_ name: String, size: Int) throws -> [UInt8] {
        let seed = UInt8(truncatingIfNeeded: name.utf8.reduce(0) { $0 &+ Int($1) })
        let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) ^ seed }
        let path = root.appendingPathComponent(name).path
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent(name).deletingLastPathComponent(), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o755])
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        return bytes
    }

    /// One request answered, as the access log has it.
    struct Request {
        var path: String
        var status: Int
        var `protocol`: String
        var connection: Int
        /// When nginx began and ended answering it, in seconds since 1970 (millisecond precision).
        var began: Double
        var ended: Double
    }

    /// The access log: the requests answered so far.
    func requests() -> [Request] {
        let text = (try? String(contentsOf: work.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 6, let status = Int(fields[1]), let connection = Int(fields[3]),
                  let ended = Double(fields[4]), let duration = Double(fields[5]) else { return nil }
            return Request(
                path: String(fields[0]), status: status, protocol: String(fields[2]), connection: connection,
                began: ended - duration, ended: ended)
        }
    }

    /// The most requests nginx was answering at once (`status` ones only, if given).
    func peakConcurrency(status: Int? = nil) -> Int {
        let answered = requests().filter { status == nil || $0.status == status }
        // An end sorts before a start at the same millisecond: one that ends as another begins is not both.
        let edges = answered.flatMap { [($0.began, 1), ($0.ended, -1)] }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
        var (running, peak) = (0, 0)
        for (_, step) in edges {
            running += step
            peak = max(peak, running)
        }
        return peak
    }

    private static func run(_ tool: String, _ arguments: [String]) throws {
        guard try ChildProcess(executable: tool, arguments: arguments).runBlocking() == 0 else {
            throw EventuallyTimeout(description: "\(tool) failed")
        }
    }

    static func freePort() throws -> Int {
        let (fd, port) = try Loopback.bind(listening: false)
        close(fd)
        return port
    }

    /// Whether nginx came to listen on `port`; false as soon as it has exited (the port was taken).
    static func waitForPort(_ port: Int, while process: ChildProcess.Started) throws -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            guard process.isRunning else { return false }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(fd)
            if connected { return process.isRunning }
            usleep(20_000)
        }
        process.terminate()
        return false
    }
}
