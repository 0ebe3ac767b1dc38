import Foundation

/// Reads WARC files with an independent reader, warcio (installed by `scripts/setup` into
/// `.build/test-tools`), checking every record's block and payload digests as it goes.
enum WARCReader {
    struct Record: Decodable {
        var file: String
        var offset: Int
        var type: String
        var uri: String?
        var id: String
        var concurrentTo: String?
        var ip: String?
        var truncated: String?
        var profile: String?
        var refersToURI: String?
        var payloadDigest: String?
        var status: Int?
        var contentType: String?
        /// The payload (an HTTP body, or a resource's bytes): its MD5 (as TestSupport.digest gives it) and length.
        var md5: String
        var length: Int
        /// The record's head as text (an HTTP message's head, or warcinfo's fields).
        var head: String
    }

    struct Unreadable: Error, CustomStringConvertible {
        var description: String
    }

    static let python: String = {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        // .build/<triple>/debug/mirrorPackageTests.xctest → .build/test-tools
        var directory = testBinary.deletingLastPathComponent()
        while directory.path != "/" && directory.lastPathComponent != ".build" { directory = directory.deletingLastPathComponent() }
        return directory.appendingPathComponent("test-tools/bin/python").path
    }()

    /// Installed, or required anyway: on CI (`CI` set) a missing reader fails the tests that need
    /// it rather than skipping them.
    static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: python) || ProcessInfo.processInfo.environment["CI"] != nil
    }

    private static let script = #"""
        import sys, json, hashlib
        from warcio.archiveiterator import ArchiveIterator
        out = []
        for path in sys.argv[1:]:
            with open(path, 'rb') as f:
                it = ArchiveIterator(f, check_digests='raise')
                for r in it:
                    h = r.rec_headers
                    head = ''
                    status = None
                    if r.http_headers is not None:
                        head = r.http_headers.to_str()
                        try:
                            status = int(r.http_headers.get_statuscode())
                        except Exception:
                            status = None
                    payload = r.raw_stream.read()
                    if r.rec_type == 'warcinfo':
                        head = payload.decode('utf-8', 'replace')
                    out.append({
                        'file': path, 'offset': it.get_record_offset(), 'type': r.rec_type,
                        'uri': h.get_header('WARC-Target-URI'), 'id': h.get_header('WARC-Record-ID'),
                        'concurrentTo': h.get_header('WARC-Concurrent-To'), 'ip': h.get_header('WARC-IP-Address'),
                        'truncated': h.get_header('WARC-Truncated'), 'profile': h.get_header('WARC-Profile'),
                        'refersToURI': h.get_header('WARC-Refers-To-Target-URI'),
                        'payloadDigest': h.get_header('WARC-Payload-Digest'),
                        'status': status, 'contentType': h.get_header('Content-Type'),
                        'md5': hashlib.md5(payload).hexdigest(), 'length': len(payload), 'head': head,
                    })
        json.dump(out, sys.stdout)
        """#

    /// Every record of the `.warc.gz` files in `directory`, in name order; throws when warcio
    /// cannot read one to its end or a digest does not match.
    static func records(in directory: String) async throws -> [Record] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".warc.gz") }.sorted()
        return try await records(files: names.map { directory + "/" + $0 })
    }

    static func records(files: [String]) async throws -> [Record] {
        // warcio reads a file cut in its last record without a word (the record just ends
        // early): gzip's own test of every member's length and CRC to the end comes first.
        for file in files {
            guard try await run("/bin/gzip", ["-t", file]).status == 0 else {
                throw Unreadable(description: "gzip -t: \(file) does not end with a whole member")
            }
        }
        let read = try await run(python, ["-c", script] + files)
        guard read.status == 0 else { throw Unreadable(description: "warcio: " + String(decoding: read.errors.suffix(2000), as: UTF8.self)) }
        return try JSONDecoder().decode([Record].self, from: read.output)
    }

    /// The index the Webrecorder project's cdxj-indexer (installed beside warcio) makes of
    /// `file`, sorted.
    static func index(_ file: String) async throws -> [UInt8] {
        let made = try await run(tool("cdxj-indexer"), ["--sort", file])
        guard made.status == 0 else { throw Unreadable(description: "cdxj-indexer failed on \(file)") }
        return Array(made.output)
    }

    /// Checks `file` as a WACZ: py-wacz's validator (the datapackage, every entry's SHA-256),
    /// and Python's zipfile (every CRC, and that WARC files are stored, not compressed again).
    /// Returns the entries' names and the index's bytes.
    static func wacz(_ file: String) async throws -> (entries: [String], index: [UInt8]) {
        let validation = try await run(tool("wacz"), ["validate", "-f", file])
        guard validation.status == 0 else {
            throw Unreadable(description: "wacz validate: " + String(decoding: (validation.output + validation.errors).suffix(2000), as: UTF8.self))
        }
        let check = try await run(python, ["-c", #"""
            import sys, zipfile, json
            z = zipfile.ZipFile(sys.argv[1])
            bad = z.testzip()
            if bad is not None:
                sys.exit('bad CRC: ' + bad)
            for i in z.infolist():
                if i.filename.startswith('archive/') and i.compress_type != 0:
                    sys.exit('compressed: ' + i.filename)
            json.dump({'entries': [i.filename for i in z.infolist()], 'index': list(z.read('indexes/index.cdxj'))}, sys.stdout)
            """#, file])
        guard check.status == 0 else { throw Unreadable(description: "zipfile: " + String(decoding: check.errors, as: UTF8.self)) }
        struct Contents: Decodable {
            var entries: [String]
            var index: [UInt8]
        }
        let contents = try JSONDecoder().decode(Contents.self, from: check.output)
        return (contents.entries, contents.index)
    }

    /// What Python's zipfile reads of the entries of the ZIP file `file`, without validating it
    /// as a WACZ (whose WARC files a test may have made up).
    static func entries(_ names: [String], of file: String) async throws -> [String: [UInt8]] {
        let output = try await python(#"""
            import sys, zipfile, json
            z = zipfile.ZipFile(sys.argv[1])
            bad = z.testzip()
            if bad is not None:
                sys.exit('bad CRC: ' + bad)
            json.dump({name: list(z.read(name)) for name in sys.argv[2:]}, sys.stdout)
            """#, [file] + names)
        return try JSONDecoder().decode([String: [UInt8]].self, from: output)
    }

    /// The standard output of `script`, run by the test tools' Python with `arguments`.
    static func python(_ script: String, _ arguments: [String]) async throws -> Data {
        let result = try await run(python, ["-c", script] + arguments)
        guard result.status == 0 else { throw Unreadable(description: "python: " + String(decoding: result.errors, as: UTF8.self)) }
        return result.output
    }

    /// The decompressed bytes of every member of `file`, for a search of what must not be there.
    static func decompressed(_ file: String) async throws -> Data {
        let unpacked = try await run("/bin/gzip", ["-dc", file])
        guard unpacked.status == 0, !unpacked.output.isEmpty else { throw Unreadable(description: "gzip -dc \(file) failed") }
        return unpacked.output
    }

    /// A program of the test tools' environment.
    private static func tool(_ name: String) -> String {
        URL(fileURLWithPath: python).deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// The `surt` package's key of each of `urls` (its defaults, as cdxj-indexer and pywb use it).
    static func surtKeys(_ urls: [String]) async throws -> [String] {
        let script = "import sys, json, surt; print(json.dumps([surt.surt(u) for u in json.loads(sys.argv[1])]))"
        let made = try await run(python, ["-c", script, String(decoding: try JSONEncoder().encode(urls), as: UTF8.self)])
        guard made.status == 0 else { throw Unreadable(description: "surt: " + String(decoding: made.errors, as: UTF8.self)) }
        return try JSONDecoder().decode([String].self, from: made.output)
    }

    /// Runs `executable` to its end: its status, standard output, and standard error (each kept
    /// in a file, so that a full pipe of one never holds up the other).
    ///
    /// On a thread of its own: a reader takes seconds on a slow machine, and waiting for it on the
    /// cooperative pool (two threads on two cores) would stall every other test's tasks meanwhile,
    /// the fixture servers' answers among them. Through ``ChildProcess``, not Foundation's
    /// `Process`, which crashes at times in a process with many descriptors open.
    private static func run(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, output: Data, errors: Data) {
        try await TestSupport.apart { try runBlocking(executable, arguments) }
    }

    private static func runBlocking(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: Data, errors: Data) {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("warc-reader-\(UUID().uuidString)").path
        let (outputPath, errorsPath) = (base + ".out", base + ".err")
        defer {
            try? FileManager.default.removeItem(atPath: outputPath)
            try? FileManager.default.removeItem(atPath: errorsPath)
        }
        let output = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        let errors = open(errorsPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer {
            if output >= 0 { close(output) }
            if errors >= 0 { close(errors) }
        }
        guard output >= 0, errors >= 0 else { throw Unreadable(description: "cannot create \(base).out or .err") }
        let status = try ChildProcess(
            executable: executable, arguments: arguments, standardOutput: output, standardError: errors
        ).runBlocking()
        return (status, FileManager.default.contents(atPath: outputPath) ?? Data(), FileManager.default.contents(atPath: errorsPath) ?? Data())
    }
}
