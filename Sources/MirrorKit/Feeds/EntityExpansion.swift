/// Expands the internal entities a feed's DOCTYPE declares (``FeedDoctype``), as mirror does
/// instead of libxml2, within a budget: a "billion laughs" (entities of entities, 10⁹ bytes from a
/// few hundred) is refused after ``maximumExpandedBytes`` of work, in milliseconds.
///
/// An entity's value stands as text: its references are expanded, mended as the document's are
/// (``FeedRepair``), and its `<`, `>`, `"` and `'` escaped, so that an expansion can neither open
/// markup, end a text with `]]>`, nor end the attribute it is used in. A reference to an external entity refuses the feed:
/// nothing is ever loaded from a file or the network.
struct EntityExpansion {
    /// The most bytes expansions may produce, all references of a document together.
    static let maximumExpandedBytes = 4 << 20
    /// The deepest chain of entities whose values refer to one another.
    static let maximumDepth = 32

    struct Refusal: Error {
        var reason: String
    }

    let doctype: FeedDoctype
    private var expanded: [String: [UInt8]] = [:]
    private var spent = 0
    private var open: [String] = []

    init(_ doctype: FeedDoctype = FeedDoctype()) {
        self.doctype = doctype
    }

    /// What a reference to `name` stands for (references and escaped text); nil when the DOCTYPE
    /// declares no such entity.
    mutating func replacement(for name: String) throws(Refusal) -> [UInt8]? {
        if doctype.externalEntities.contains(name) {
            throw Refusal(reason: "uses the external entity &\(name.prefix(64));, which mirror never loads: entities can reach local files")
        }
        guard let value = doctype.entities[name] else { return nil }
        let text: [UInt8]
        if let done = expanded[name] {
            text = done
        } else {
            text = try expand(name, value)
            expanded[name] = text
        }
        try spend(text.count)
        return text
    }

    private mutating func expand(_ name: String, _ value: [UInt8]) throws(Refusal) -> [UInt8] {
        guard !open.contains(name) else { throw Refusal(reason: "declares the entity &\(name.prefix(64)); in terms of itself") }
        guard open.count < Self.maximumDepth else {
            throw Refusal(reason: "nests entities more than \(Self.maximumDepth) deep")
        }
        open.append(name)
        defer { open.removeLast() }
        var text: [UInt8] = []
        var index = 0
        while index < value.count {
            let byte = value[index]
            switch byte {
            case UInt8(ascii: "&"):
                let mend = try FeedRepair.reference(value, at: index, entities: &self)
                text += mend.replacement ?? Array(value[index..<(index + mend.length)])
                index += mend.length
                continue
            // Numeric references, which libxml2's recovery keeps where it drops named ones.
            case UInt8(ascii: "<"): text += "&#60;".utf8
            // `]]>` is not allowed in text: no expansion may make one.
            case UInt8(ascii: ">"): text += "&#62;".utf8
            case UInt8(ascii: "\""): text += "&#34;".utf8
            case UInt8(ascii: "'"): text += "&#39;".utf8
            default: text.append(byte)
            }
            index += 1
            try spend(0, pending: text.count)
        }
        return text
    }

    /// Counts `bytes` produced; `pending`, bytes of an expansion still being built, count too.
    private mutating func spend(_ bytes: Int, pending: Int = 0) throws(Refusal) {
        spent += bytes
        if spent + pending > Self.maximumExpandedBytes {
            throw Refusal(reason: "declares entities that expand past \(Self.maximumExpandedBytes >> 20) MiB (a \"billion laughs\")")
        }
    }
}
