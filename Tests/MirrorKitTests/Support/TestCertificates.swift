import Foundation

/// A certificate authority made for one test with the openssl command, and certificates it signs:
/// what a PostgreSQL or HTTPS server of the test presents, and what a client shows it.
struct TestCertificates {
    let directory: URL
    /// The CA's certificate, PEM: what `sslrootcert` names.
    var authority: String { directory.appendingPathComponent("ca.crt").path }

    /// A new CA in `directory` (made if missing), named `name` so that two in one test differ.
    init(in directory: URL, name: String = "ca") throws {
        self.directory = directory.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        try openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", path("ca.key"), "-out", path("ca.crt"), "-days", "2", "-subj", "/CN=mirror test \(name)"])
    }

    /// A certificate and key signed by this CA for `commonName`, with `alternativeNames` as its
    /// subjectAltName (`IP:127.0.0.1`, `DNS:db.example`): (certificate, key) paths.
    func issue(_ file: String, commonName: String, alternativeNames: [String] = []) throws -> (certificate: String, key: String) {
        let (certificate, key, request, extensions) = (path("\(file).crt"), path("\(file).key"), path("\(file).csr"), path("\(file).ext"))
        try openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                     "-keyout", key, "-out", request, "-subj", "/CN=\(commonName)"])
        try Data((alternativeNames.isEmpty ? "" : "subjectAltName=\(alternativeNames.joined(separator: ","))\n").utf8)
            .write(to: URL(fileURLWithPath: extensions))
        try openssl(["x509", "-req", "-in", request, "-CA", authority, "-CAkey", path("ca.key"), "-CAcreateserial",
                     "-out", certificate, "-days", "2", "-extfile", extensions])
        return (certificate, key)
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    private func openssl(_ arguments: [String]) throws {
        let status = try ChildProcess(executable: "/usr/bin/openssl", arguments: arguments).runBlocking()
        guard status == 0 else { throw EventuallyTimeout(description: "openssl \(arguments.joined(separator: " ")) exited \(status)") }
    }
}
