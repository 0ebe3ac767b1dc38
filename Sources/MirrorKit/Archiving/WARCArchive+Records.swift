import CZlib
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// Records into the file being written: each digested, deduplicated against the payloads archived
/// before, and written as a gzip member of its own, its place noted in the file's index.
extension WARCArchive {
    func write(_ record: WARCRecord, date: timespec, state: inout State) throws(FileSystemError) {
        let date = WARCRecord.date(date)
        var unwritten: WARCRecord? = record
        if case .streamed(let stream, let crc) = record.body {
            unwritten = try writeStreamed(record, stream, crc: crc, date: date, state: &state)
        }
        if let record = unwritten {
            if state.file == nil { try openFile(&state) }
            let (record, hashedCRC) = try Self.digested(record, state: &state)
            try writeMember(state.payloads.deduplicated(record, date: date), date: date, hashedCRC: hashedCRC, state: &state)
        }
    }

    /// Closes the file once it has reached its size: after a whole exchange, so that the size
    /// never splits a request from its response. (A response streamed into a file of its own,
    /// 64 MiB and more, is in another file than its request by design.)
    func closeIfFull(_ state: inout State) throws(FileSystemError) {
        if let file = state.file, file.end >= maxFileSize { try closeFile(&state) }
    }

    /// A streamed response: closed in its own file (nil returned); or, its payload archived
    /// before, given up for the `revisit` returned, to be written in this one; or, its stream
    /// having failed (its file could not be made, a write failed), the record with its body read
    /// back from the transfer's file, as any other. Bytes not those that arrived fail it.
    private func writeStreamed(_ record: WARCRecord, _ stream: WARCStream, crc: UInt32, date: String, state: inout State) throws(FileSystemError) -> WARCRecord? {
        var record = record
        do throws(FileSystemError) {
            let digests = try stream.finish(crc: crc)
            record.fields += [("WARC-Payload-Digest", digests.payload), ("WARC-Block-Digest", digests.block)]
        } catch {
            stream.discard()
            guard error.problem != .changedMeanwhile, let body = stream.bodyFile(crc: crc) else { throw error }
            record.body = .file(body)
            return record
        }
        let kept = state.payloads.deduplicated(record, date: date)
        guard kept.type == record.type else {
            stream.discard()
            return kept
        }
        do throws(FileSystemError) {
            try stream.close(record, date: date)
        } catch {
            // Its file not whole (the header or the last block could not be written): the record
            // is written here instead, its digests taken and its payload already remembered.
            guard !stream.isWhole, let body = stream.bodyFile(crc: crc) else { throw error }
            stream.discard()
            record.body = .file(body)
            if state.file == nil { try openFile(&state) }
            try writeMember(record, date: date, state: &state)
        }
        return nil
    }

    /// `hashedCRC`: the CRC-32 of a file body's bytes as they were digested, for a body whose
    /// bytes as they arrived are not known (a resource).
    func writeMember(_ record: WARCRecord, date: String, hashedCRC: UInt32? = nil, state: inout State) throws(FileSystemError) {
        // Only the name is taken out: a copy of the file's state would hold its index, which the
        // add below would then copy whole, at every record.
        guard let name = state.file?.name else { return }
        let member = state.gzip
        let start = member.end
        member.begin(compresses: Self.compresses(record))
        do throws(FileSystemError) {
            try member.add(record.header(date: date))
            try member.add(record.head)
            switch record.body {
            case .bytes(let bytes):
                try member.add(bytes)
            case .file(let body):
                try Self.copy(body, expecting: body.crc ?? hashedCRC, into: member, through: state.buffer.bytes, path: directory.path(of: name))
            case .streamed:
                preconditionFailure("a streamed body is written by its stream")
            }
            try member.add(Array("\r\n\r\n".utf8))
            try member.finish()
        } catch {
            // What was written of the record goes, so the file still ends with a whole one.
            member.abandonMember()
            throw error
        }
        state.file?.end = member.end
        state.file?.index.add(Self.indexed(record, date: date), offset: start, length: member.end - start, file: name)
    }

    /// Whether a record's member is worth compressing: heads, and text (JSON, XML, HTML), not
    /// media, whose bytes are compressed already.
    private static func compresses(_ record: WARCRecord) -> Bool {
        guard record.body.length > 0 else { return true }
        return compresses(type: record.type == "resource" ? record.contentType : record.http.contentType)
    }

    /// Whether a body of the media type `type` is worth compressing: text (JSON, XML, HTML).
    static func compresses(type: String?) -> Bool {
        let type = type?.lowercased() ?? ""
        return type.hasPrefix("text/") || type.hasSuffix("json") || type.hasSuffix("xml") || type.hasSuffix("javascript")
    }

    /// What the index says of `record`.
    static func indexed(_ record: WARCRecord, date: String) -> CDXJIndex.IndexedRecord {
        let field = { (name: String) in record.fields.first { $0.name == name }?.value }
        return CDXJIndex.IndexedRecord(
            type: record.type, targetURI: field("WARC-Target-URI"), date: date, payloadDigest: field("WARC-Payload-Digest"),
            http: record.http, contentType: record.contentType)
    }

    /// `record` with its digests: WARC-Block-Digest and, but for a request, WARC-Payload-Digest
    /// (SHA-1 in base32). A body in a file is read once for both, and checked as it is copied
    /// against the CRC-32 of its bytes as they arrived, or, where that is not known (a resource),
    /// against the CRC-32 of the bytes digested, returned here.
    private static func digested(_ record: WARCRecord, state: inout State) throws(FileSystemError) -> (WARCRecord, hashedCRC: UInt32?) {
        guard record.type != "warcinfo", !record.fields.contains(where: { $0.name == "WARC-Block-Digest" }) else { return (record, nil) }
        var hashedCRC: uLong?
        if case .file(let body) = record.body, body.crc == nil { hashedCRC = crc32(0, nil, 0) }
        let uri = record.fields.first { $0.name == "WARC-Target-URI" }?.value ?? "(a record)"
        let (block, payload) = (state.blockDigest, state.payloadDigest)
        let take = { (bytes: UnsafeRawBufferPointer) throws(FileSystemError) in
            let ok = bytes.count >= 64 << 10 ? TwoDigests(payload: payload, block: block, bytes: bytes).takeSideBySide() : {
                do throws(DigestError) {
                    try payload.update(bytes)
                    try block.update(bytes)
                    return true
                } catch {
                    return false
                }
            }()
            if !ok { throw FileSystemError(path: uri, problem: .system(EIO)) }
            if let crc = hashedCRC { hashedCRC = crc32(crc, bytes.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt(bytes.count)) }
        }
        var record = record
        do throws(DigestError) {
            try block.restart()
            try payload.restart()
            try block.update(record.head)
        } catch {
            throw FileSystemError(path: uri, problem: .system(EIO))
        }
        switch record.body {
        case .bytes(let bytes):
            let result: Result<Void, FileSystemError> = bytes.withUnsafeBytes { bytes in Result { () throws(FileSystemError) in try take(bytes) } }
            try result.get()
        case .file(let body):
            try read(body, through: state.buffer.bytes, path: uri, take)
        case .streamed:
            preconditionFailure("a streamed body is digested by its stream")
        }
        do throws(DigestError) {
            // A 304's revisit has no payload of its own, and the profile's payload is the
            // original's, which this record does not hold: no digest (warcio's check refuses one).
            let notModified = record.type == "revisit" && record.fields.contains { $0.name == "WARC-Profile" && $0.value == Self.notModifiedProfile }
            if record.type != "request", !notModified {
                record.fields.append(("WARC-Payload-Digest", WARCRecord.digestLabel(sha1: try payload.finalize())))
            }
            record.fields.append(("WARC-Block-Digest", WARCRecord.digestLabel(sha1: try block.finalize())))
        } catch {
            throw FileSystemError(path: uri, problem: .system(EIO))
        }
        return (record, hashedCRC.map { UInt32(truncatingIfNeeded: $0) })
    }

    /// Copies a body's bytes from its file into the member; a body whose bytes are not those
    /// that arrived (written over since) fails, and its record with it.
    private static func copy(
        _ body: BodyFile, expecting expected: UInt32?, into member: GzipMemberWriter, through buffer: UnsafeMutableRawBufferPointer, path: String
    ) throws(FileSystemError) {
        // The member's CRC-32 as gzip keeps it: what came before, and then the body as it
        // arrived, must be what the member now holds (no second pass over the bytes).
        let before = member.crc
        try read(body, through: buffer, path: path) { bytes throws(FileSystemError) in try member.add(bytes) }
        if let expected, member.crc != UInt32(truncatingIfNeeded: crc32_combine(uLong(before), uLong(expected), off_t(body.length))) {
            throw FileSystemError(path: path, problem: .changedMeanwhile)
        }
    }

    /// Hands `each` the body's bytes, read from its file through `buffer`; a file shorter than the
    /// body is one cut since.
    private static func read(
        _ body: BodyFile, through buffer: UnsafeMutableRawBufferPointer, path: String,
        _ each: (UnsafeRawBufferPointer) throws(FileSystemError) -> Void
    ) throws(FileSystemError) {
        var done: Int64 = 0
        while done < body.length {
            let want = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<Int(min(Int64(buffer.count), body.length - done))])
            let count = try Directory.readAll(into: want, from: body.fd, at: body.offset + done, path: path)
            guard count == want.count else { throw FileSystemError(path: path, problem: .changedMeanwhile) }
            try each(UnsafeRawBufferPointer(want))
            done += Int64(count)
        }
    }
}

/// A large block's two digests, taken side by side on two threads: the second core is otherwise
/// idle while the archive catches up with the transfers.
///
/// `@unchecked Sendable`: `concurrentPerform` returns only once both of its iterations have
/// ended; each iteration updates one of the two contexts and no other; the bytes are only read,
/// and their owner waits for both.
private struct TwoDigests: @unchecked Sendable {
    let payload: MD5Context
    let block: MD5Context
    let bytes: UnsafeRawBufferPointer

    /// False if either digest could not take the bytes.
    func takeSideBySide() -> Bool {
        let failed = Atomic<Bool>(false)
        DispatchQueue.concurrentPerform(iterations: 2) { part in
            do throws(DigestError) {
                try (part == 0 ? payload : block).update(bytes)
            } catch {
                failed.store(true, ordering: .relaxed)
            }
        }
        return !failed.load(ordering: .relaxed)
    }
}
