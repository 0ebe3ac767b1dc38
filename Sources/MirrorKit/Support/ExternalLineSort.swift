/// Lines sorted in bounded memory, however many: they wait in memory up to a bound, past it
/// they are sorted and written out as a run to a file of their own (unnamed in a directory, gone
/// with the process, killed or not), and the runs are merged as the lines are read back, a few
/// dozen at a time. Lines compare as bytes, as `LC_ALL=C sort` and cdxj-indexer order them.
/// Without a directory, or where a run cannot be written, the lines stay in memory.
final class ExternalLineSort {
    /// The lines held, one after another, each with its newline; their places in it. One buffer,
    /// kept across runs: a line each of their own made a long run's memory a sieve.
    private var heldText: [UInt8] = []
    private var heldLines: [Range<Int>] = []
    private let heldLimit: Int
    private let directory: Directory?
    /// Where the runs go; made with the first.
    private(set) var spool: Spool?
    /// A run could not be written: the rest stays in memory (trying again at every line would
    /// sort all it holds each time).
    private var spillFailed = false
    /// The sorted runs written to the spool, in order.
    private(set) var runs: [Range<Int64>] = []
    /// Runs merged at once: their readers' buffers are what a merge holds.
    private static let fanIn = 64

    init(spillingInto directory: Directory?, heldLimit: Int = 4 << 20) {
        self.directory = directory
        self.heldLimit = heldLimit
    }

    /// Appends one line, which holds no newline.
    func append(line: some Collection<UInt8>) {
        if heldText.isEmpty { heldText.reserveCapacity(heldLimit + (16 << 10)) }
        let start = heldText.count
        heldText += line
        heldLines.append(start..<heldText.count)
        heldText.append(0x0A)
        if heldText.count >= heldLimit { spillRun() }
    }

    /// Lets go of every line, and of the file and the disk space the runs took.
    func removeAll() {
        heldText = []
        heldLines = []
        runs = []
        spool = nil
    }

    /// The lines held, in their sorted order.
    private func sortedHeldLines() -> [Range<Int>] {
        heldText.withUnsafeBufferPointer { text in
            heldLines.sorted { text[$0].lexicographicallyPrecedes(text[$1]) }
        }
    }

    /// Writes the lines held, sorted, as a run at the end of the spool.
    private func spillRun() {
        guard let directory, !spillFailed else { return }
        do throws(FileSystemError) {
            if self.spool == nil { self.spool = try Spool(in: directory) }
            guard let spool else { return }
            let start = spool.length
            for line in sortedHeldLines() { try spool.append(heldText[line.lowerBound...line.upperBound]) }
            try spool.flush()
            runs.append(start..<spool.length)
        } catch {
            // Kept in memory: the lines are whole, if larger than they should be. The part of
            // the run written goes unused; the part still buffered must not reach the file
            // after a later run's bytes.
            spool?.discardBuffered()
            spillFailed = true
            return
        }
        heldText.removeAll(keepingCapacity: true)
        heldLines = []
    }

    /// Hands `body` every line appended, in order, each without its newline.
    func merge(_ body: ([UInt8]) throws(FileSystemError) -> Void) throws(FileSystemError) {
        let held = sortedHeldLines()
        guard let spool, !runs.isEmpty else {
            for line in held { try body(Array(heldText[line])) }
            return
        }
        // Many runs are merged a few dozen at a time into longer ones, at the spool's end.
        while runs.count > Self.fanIn {
            let group = Array(runs.prefix(Self.fanIn))
            let start = spool.length
            try Self.merge(group, of: spool, held: []) { (line: ArraySlice<UInt8>) throws(FileSystemError) in
                try spool.append(line)
                try spool.append(0x0A)
            }
            try spool.flush()
            runs = Array(runs.dropFirst(Self.fanIn)) + [start..<spool.length]
        }
        let text = heldText
        try Self.merge(runs, of: spool, held: held.map { text[$0] }) { (line: ArraySlice<UInt8>) throws(FileSystemError) in
            try body(Array(line))
        }
    }

    /// The lines of `runs` of `spool` and of `held` (each sorted), merged, to `body`.
    private static func merge(
        _ runs: [Range<Int64>], of spool: Spool, held: [ArraySlice<UInt8>], _ body: (ArraySlice<UInt8>) throws(FileSystemError) -> Void
    ) throws(FileSystemError) {
        var readers = runs.map { LineReader(fd: spool.descriptor, range: $0, path: spool.path) }
        // A binary heap of each source's next line; the held lines are the source past the runs.
        var heap: [(line: ArraySlice<UInt8>, source: Int)] = []
        var heldNext = 0
        func next(of source: Int) throws(FileSystemError) -> ArraySlice<UInt8>? {
            if source < readers.count { return try readers[source].next()?[...] }
            guard heldNext < held.count else { return nil }
            defer { heldNext += 1 }
            return held[heldNext]
        }
        for source in 0...readers.count {
            if let line = try next(of: source) {
                heap.append((line, source))
                siftUp(&heap, from: heap.count - 1)
            }
        }
        while let top = heap.first {
            try body(top.line)
            if let line = try next(of: top.source) {
                heap[0] = (line, top.source)
            } else {
                heap[0] = heap[heap.count - 1]
                heap.removeLast()
            }
            siftDown(&heap, from: 0)
        }
    }

    private static func precedes(_ a: (line: ArraySlice<UInt8>, source: Int), _ b: (line: ArraySlice<UInt8>, source: Int)) -> Bool {
        a.line.lexicographicallyPrecedes(b.line)
    }

    private static func siftUp(_ heap: inout [(line: ArraySlice<UInt8>, source: Int)], from start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(heap[child], heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private static func siftDown(_ heap: inout [(line: ArraySlice<UInt8>, source: Int)], from start: Int) {
        var parent = start
        while true {
            var least = parent
            let left = 2 * parent + 1
            if left < heap.count && precedes(heap[left], heap[least]) { least = left }
            if left + 1 < heap.count && precedes(heap[left + 1], heap[least]) { least = left + 1 }
            guard least != parent else { return }
            heap.swapAt(parent, least)
            parent = least
        }
    }
}
