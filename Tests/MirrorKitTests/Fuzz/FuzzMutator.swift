/// Byte-level mutations in the manner of libFuzzer's, plus what finds bugs in parsers of text
/// formats: the format's own tokens, numbers at the edges of the integer types, Unicode that is
/// odd or not UTF-8 at all, and nesting deep enough to reach a parser's recursion limit.
struct FuzzMutator: Sendable {
    /// Tokens of the format, inserted whole.
    var dictionary: [[UInt8]]
    /// Openings and closings whose repetition nests (`[` and `]`, `<a>` and `</a>`).
    var nesting: [(open: [UInt8], close: [UInt8])] = []
    /// Inputs are cut to this length, so that one input stays well inside the time budget.
    var maxLength: Int

    /// A new input: a corpus entry mutated one to sixteen times, few times more often than many.
    func mutate(_ corpus: [[UInt8]], using random: inout FuzzRandom) -> [UInt8] {
        var input = corpus[random.below(corpus.count)]
        let rounds = 1 << random.below(5)
        for _ in 0..<random.below(rounds) + 1 {
            mutateOnce(&input, corpus: corpus, using: &random)
            // Cut after every round: a deep nest copied by a later round would run to megabytes.
            if input.count > maxLength { input.removeLast(input.count - maxLength) }
        }
        return input
    }

    private func mutateOnce(_ input: inout [UInt8], corpus: [[UInt8]], using random: inout FuzzRandom) {
        switch random.below(15) {
        case 0 where !input.isEmpty:
            input[random.below(input.count)] ^= 1 << UInt8(random.below(8))
        case 1 where !input.isEmpty:
            input[random.below(input.count)] = UInt8(truncatingIfNeeded: random.next())
        case 2 where !input.isEmpty:
            input[random.below(input.count)] = Self.interestingBytes[random.below(Self.interestingBytes.count)]
        case 3:
            let bytes = (0..<random.below(8) + 1).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            input.insert(contentsOf: bytes, at: random.below(input.count + 1))
        case 4 where !input.isEmpty:
            let range = chunk(of: input.count, longest: 64, using: &random)
            input.removeSubrange(range)
        case 5 where !input.isEmpty:
            let copy = input[chunk(of: input.count, longest: 256, using: &random)]
            input.insert(contentsOf: copy, at: random.below(input.count + 1))
        case 6:
            // A piece of another corpus entry: a tag of one feed inside another, say.
            let other = corpus[random.below(corpus.count)]
            guard !other.isEmpty else { return }
            input.insert(contentsOf: other[chunk(of: other.count, longest: 512, using: &random)], at: random.below(input.count + 1))
        case 7:
            let other = corpus[random.below(corpus.count)]
            input = Array(input.prefix(random.below(input.count + 1)) + other.suffix(random.below(other.count + 1)))
        case 8 where !dictionary.isEmpty, 9 where !dictionary.isEmpty:
            input.insert(contentsOf: dictionary[random.below(dictionary.count)], at: random.below(input.count + 1))
        case 10:
            replaceNumber(in: &input, using: &random)
        case 11:
            let text = Self.oddText[random.below(Self.oddText.count)]
            input.insert(contentsOf: text, at: random.below(input.count + 1))
        case 12 where !input.isEmpty:
            input.removeLast(random.below(input.count) + 1)
        case 13 where !nesting.isEmpty:
            let (open, close) = nesting[random.below(nesting.count)]
            let depth = min(Self.depths[random.below(Self.depths.count)], maxLength / open.count + 1)
            let at = random.below(input.count + 1)
            // Closed or left open: an unclosed nest must fail as cleanly as a deep closed one.
            var nest = [UInt8](Array(repeating: open, count: depth).joined())
            if random.oneIn(2) { nest += Array(repeating: close, count: depth).joined() }
            input.insert(contentsOf: nest, at: at)
        case 14 where !input.isEmpty:
            // One piece many times over: long names, long numbers, huge attribute values.
            let piece = input[chunk(of: input.count, longest: 16, using: &random)]
            let copies = Array(repeating: Array(piece), count: min(random.below(4096), maxLength / piece.count) + 2).joined()
            input.insert(contentsOf: copies, at: random.below(input.count + 1))
        default:
            input.insert(UInt8(truncatingIfNeeded: random.next()), at: random.below(input.count + 1))
        }
    }

    /// A range of 1...`longest` positions inside a collection of `count` (which is not empty).
    private func chunk(of count: Int, longest: Int, using random: inout FuzzRandom) -> Range<Int> {
        let start = random.below(count)
        return start..<min(count, start + random.below(longest) + 1)
    }

    /// Replaces the first run of digits after a random place (or, when there is none near, that
    /// place) with a number at the edge of what Int32, Int64, UInt64 and Double can hold, or with
    /// a sign or an exponent.
    private func replaceNumber(in input: inout [UInt8], using random: inout FuzzRandom) {
        let number = Self.interestingNumbers[random.below(Self.interestingNumbers.count)]
        let isDigit = { (byte: UInt8) in (48...57).contains(byte) }
        let place = random.below(input.count + 1)
        guard let found = input[place..<min(input.count, place + 1024)].firstIndex(where: isDigit) else {
            input.insert(contentsOf: number, at: place)
            return
        }
        var start = found
        var end = start + 1
        while start > 0, isDigit(input[start - 1]) { start -= 1 }
        while end < input.count, isDigit(input[end]) { end += 1 }
        input.replaceSubrange(start..<end, with: number)
    }

    static let interestingBytes: [UInt8] = [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x20, 0x22, 0x26, 0x27, 0x2F, 0x3C, 0x3E,
                                            0x5C, 0x7F, 0x80, 0xC0, 0xFE, 0xFF]

    static let interestingNumbers: [[UInt8]] = ([
        "0", "-0", "-1", "1", "+1", "00000000000000000000000001", "127", "128", "255", "256", "65535", "65536",
        "2147483647", "2147483648", "-2147483648", "-2147483649", "4294967295", "4294967296",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
        "18446744073709551615", "18446744073709551616", "99999999999999999999999999999999999999999",
        "1e308", "1e309", "-1e309", "1.5", "1e3", "0x10", "NaN", "Infinity", "1_000",
    ] as [String]).map { Array($0.utf8) }

    /// Text that is legal but odd (NUL, BOM, bidi overrides, combining marks, emoji sequences,
    /// the last code points) and bytes that are no UTF-8 at all (overlong, surrogate, beyond
    /// U+10FFFF, cut short, a UTF-16 byte order mark).
    static let oddText: [[UInt8]] = ([
        "\u{0}", "\u{FEFF}", "\u{202E}", "e\u{301}", "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}", "\u{FFFF}",
        "\u{10FFFF}", "\u{1D54F}", "\u{2028}", "\u{85}", "ı", "ß", "\u{FF0F}",
    ] as [String]).map { Array($0.utf8) } + [
        [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF], [0xFE, 0xFF], [0xFF, 0xFE],
        [0xEF, 0xBB, 0xBF], [0xE2, 0x82], [0xF0, 0x9F], [0x80, 0x80, 0x80],
    ]

    /// Around the limits parsers set themselves (libxml2's 256 without XML_PARSE_HUGE, 512 for
    /// Foundation's JSON), and far beyond them.
    static let depths = [2, 64, 255, 256, 257, 511, 512, 513, 1_000, 20_000]
}

extension Array where Element == [UInt8] {
    /// The UTF-8 of each string: dictionaries are written as text.
    init(tokens: [String]) {
        self = tokens.map { [UInt8]($0.utf8) }
    }
}
