import FoundationEssentials

/// Parses byte counts and rates as people write them: `500000`, `500k`, `2M`, `1.5G` (powers of
/// 1024, case-insensitive, an optional trailing `B` or `/s`).
enum ByteCount {
    static func parse(_ text: String) -> Int64? {
        var body = text.trimming(.spaces).lowercased()
        if body.hasSuffix("/s") { body.removeLast(2) }
        if body.hasSuffix("b") { body.removeLast() }
        var multiplier: Double = 1
        if let unit = body.last, let power = ["k": 1, "m": 2, "g": 3, "t": 4][String(unit)] {
            multiplier = pow1024(power)
            body.removeLast()
        }
        guard let number = Double(body), number.isFinite, number >= 0 else { return nil }
        let value = number * multiplier
        guard value < Double(Int64.max) else { return nil }
        return Int64(value)
    }

    private static func pow1024(_ power: Int) -> Double {
        (0..<power).reduce(1) { value, _ in value * 1024 }
    }
}
