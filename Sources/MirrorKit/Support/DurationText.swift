import FoundationEssentials

/// Durations as people write them on a command line: `90s`, `50m`, `2h`, `1h30m`, or a number of
/// seconds.
enum DurationText {
    /// Nil for anything else, for zero, and for more than `atMost` seconds (a year).
    static func parse(_ text: String, atMost: Int = 366 * 86_400) -> Duration? {
        let trimmed = text.trimming(.spaces).lowercased()
        guard !trimmed.isEmpty, trimmed.count <= 32 else { return nil }
        if let seconds = Int(trimmed) { return valid(seconds, atMost: atMost) }
        var total = 0
        var number = ""
        var sawUnit = false
        for character in trimmed {
            if character.isASCII, character.isNumber {
                number.append(character)
                continue
            }
            let unit: Int
            switch character {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            case "d": unit = 86_400
            default: return nil
            }
            guard let value = Int(number) else { return nil }
            let (product, overflow) = value.multipliedReportingOverflow(by: unit)
            guard !overflow else { return nil }
            let (sum, overflowed) = total.addingReportingOverflow(product)
            guard !overflowed else { return nil }
            total = sum
            number = ""
            sawUnit = true
        }
        guard number.isEmpty, sawUnit else { return nil }
        return valid(total, atMost: atMost)
    }

    /// A wait that may be none: a duration as ``parse(_:)`` reads it, or one that adds up to zero
    /// (`0`, `0s`, `0m`).
    static func parseWait(_ text: String) -> Duration? {
        if let duration = parse(text) { return duration }
        let trimmed = text.trimming(.spaces)
        guard !trimmed.isEmpty, trimmed.count <= 32, trimmed.allSatisfy({ "0smhd".contains($0) }), trimmed.first == "0" else {
            return nil
        }
        return .zero
    }

    /// `duration` as people read it: `0.3 s`, `1.3 s`, `42 s`, `5 min 3 s`, `1 h 30 min`; never
    /// the 16 digits a `Duration` prints.
    static func spoken(_ duration: Duration) -> String {
        let seconds = max(duration.inSeconds, 0)
        if seconds < 10 { return CFormat.string("%.1f s", seconds) }
        let whole = Int(seconds.rounded())
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min" + (whole % 60 > 0 ? " \(whole % 60) s" : "") }
        return "\(whole / 3600) h" + (whole % 3600 / 60 > 0 ? " \(whole % 3600 / 60) min" : "")
    }

    private static func valid(_ seconds: Int, atMost: Int) -> Duration? {
        (1...atMost).contains(seconds) ? .seconds(seconds) : nil
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// The duration in seconds, fractions included: for rates and for APIs that take seconds.
    package var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
