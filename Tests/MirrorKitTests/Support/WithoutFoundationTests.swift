import Foundation
import Testing
@testable import MirrorKit

/// MirrorKit links `FoundationEssentials` alone; what it wrote by hand in place of Foundation's
/// formatters and string editing agrees with Foundation, which the tests link as the oracle.
@Suite("Foundation's dates, numbers and text, without Foundation")
struct WithoutFoundationTests {
    private static func formatter(_ format: String, zone: String = "UTC") -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: zone)
        formatter.dateFormat = format
        return formatter
    }

    @Test func feedDatesInRFC822sFormsReadAsDateFormatterReadThem() {
        let forms = [
            ("EEE, d MMM yyyy HH:mm:ss Z", "GMT"), ("EEE, dd MMM yyyy HH:mm:ss Z", "America/New_York"),
            ("d MMM yyyy HH:mm:ss Z", "Asia/Kolkata"), ("EEE, d MMM yyyy HH:mm Z", "Europe/Berlin"),
            ("EEE, d MMM yyyy HH:mm:ss xxx", "Australia/Adelaide"), ("EEE, d MMM yyyy H:mm:ss Z", "UTC"),
        ]
        var seconds = 631_152_000.0  // 1990
        while seconds < 2_524_608_000 {  // 2050
            for (format, zone) in forms {
                let formatter = Self.formatter(format, zone: zone)
                let text = formatter.string(from: Date(timeIntervalSince1970: seconds))
                let expected = formatter.date(from: text)
                #expect(expected != nil && FeedDate.parse(text) == expected, "\(text)")
            }
            seconds += 3_777_777.7
        }
    }

    @Test func feedDatesWithZoneNamesTwoDigitYearsAndLongNames() {
        let utc = { (text: String) in ISO8601DateFormatter().date(from: text) }
        #expect(FeedDate.parse("Fri, 14 Aug 2026 12:31:23 EDT") == utc("2026-08-14T16:31:23Z"))
        #expect(FeedDate.parse("Fri, 14 Aug 2026 12:31:23 pst") == utc("2026-08-14T20:31:23Z"))
        #expect(FeedDate.parse("14 Aug 2026 12:31:23 CEST") == utc("2026-08-14T10:31:23Z"))
        #expect(FeedDate.parse("Friday, 14 August 2026 12:31 +05:30") == utc("2026-08-14T07:01:00Z"))
        #expect(FeedDate.parse("  Sat, 07 Sep 02 00:00:01 GMT\n", currentYear: 2026) == utc("2002-09-07T00:00:01Z"))
        #expect(FeedDate.parse("Wed, 01 Jan 99 10:00:00 +0000", currentYear: 2026) == utc("1999-01-01T10:00:00Z"))
        #expect(FeedDate.parse("2026-11-01T09:00:00+01:00") == utc("2026-11-01T08:00:00Z"))
        #expect(FeedDate.parse("2026-11-01T09:00:00.250Z") == utc("2026-11-01T09:00:00Z")!.addingTimeInterval(0.25))
        #expect(FeedDate.parse("2026-11-01") == utc("2026-11-01T00:00:00Z"))
        #expect(FeedDate.parse("Tue, 5 Mar 2024 9:05:00 GMT") == utc("2024-03-05T09:05:00Z"))
        #expect(FeedDate.parse("Tue, 5 Mar 2024 09:05:00 GMT+02:00") == utc("2024-03-05T07:05:00Z"))
        for bad in ["Fri, 30 Feb 2026 12:31:23 GMT", "Fri, 14 Aug 2026 24:31:23 GMT", "Fri, 14 Aug 2026 12:31:23 XYZ",
                    "Fri, 14 Aug 2026 12:31:23 +2500", "Fri, 14 Aug 2026 12:31:23", "Fri 14 Aug 2026 12:31:23 GMT",
                    "Fri, 14 Foo 2026 12:31:23 GMT", "Fri, 14 Aug 20266 12:31:23 GMT", "Fri, 14 Aug 2026 12:3:23 GMT", ""] {
            #expect(FeedDate.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func httpDatesAreWrittenAsDateFormatterWritesThem() {
        let formatter = Self.formatter("EEE, dd MMM yyyy HH:mm:ss 'GMT'", zone: "GMT")
        var seconds = -2_208_988_800.0  // 1900
        while seconds < 4_102_444_800 {  // 2100
            let date = Date(timeIntervalSince1970: seconds)
            #expect(HTTPDate.format(date) == formatter.string(from: date))
            seconds += 5_555_555.5
        }
        // Years of fewer and of more than four digits, as printf writes them (the formatter
        // counts years before 1582 in Julian days).
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        for (year, month, day) in [(0, 3, 1), (7, 1, 1), (999, 12, 31), (1000, 6, 15), (9999, 12, 31), (10000, 1, 1), (-1, 5, 5)] {
            let date = Date(timeIntervalSince1970: Double(HTTPDate.daysSinceEpoch(year: year, month: month, day: day)) * 86_400 + 3_723)
            let time = CivilTime(date)
            let printed = weekdays[time.weekday] + ", " + CFormat.string("%02d ", day) + months[month - 1]
                + CFormat.string(" %04d %02d:%02d:%02d GMT", year, 1, 2, 3)
            #expect(HTTPDate.format(date) == printed)
        }
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", currentYear: 2026) == Date(timeIntervalSince1970: 784_111_777))
        #expect(HTTPDate.parse("Sunday, 06-Nov-76 08:49:37 GMT", currentYear: 2026) == Date(timeIntervalSince1970: 784_111_777)
            .addingTimeInterval(-Double(HTTPDate.daysSinceEpoch(year: 1994, month: 11, day: 6) - HTTPDate.daysSinceEpoch(year: 2076, month: 11, day: 6)) * 86_400))
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == Date(timeIntervalSince1970: 784_111_777))
        #expect(HTTPDate.parse("Sun Nov 6 08:49:37 1994 extra") == nil)
    }

    /// A Last-Modified laid out as servers send it is read from its bytes; every text one change
    /// away from that layout (a byte replaced, added or taken away) reads as the fields split at
    /// spaces read it, whichever of the two readings answers.
    @Test func aFixdateReadFromItsBytesReadsAsItsFieldsDo() {
        let formatter = Self.formatter("EEE, dd MMM yyyy HH:mm:ss 'GMT'", zone: "GMT")
        let replacements: [String] = ["0", "9", "a", "Z", " ", ",", ":", "+", "-", "\t", "é", "\u{301}", "GMT"]
        var seconds = -2_208_988_800.0  // 1900
        var compared = 0
        while seconds < 4_102_444_800 {  // 2100
            var text = formatter.string(from: Date(timeIntervalSince1970: seconds))
            #expect(HTTPDate.parseFixdate(text) == formatter.date(from: text), "\(text)")
            // Read from its bytes, not by the fields' reading.
            #expect(text.withUTF8(HTTPDate.parseExactFixdate) == .some(formatter.date(from: text)), "\(text)")
            let characters = Array(text)
            var variants: [String] = []
            for index in characters.indices {
                var removed = characters
                removed.remove(at: index)
                variants.append(String(removed))
                for replacement in replacements {
                    var replaced = characters
                    replaced.replaceSubrange(index...index, with: replacement)
                    variants.append(String(replaced))
                }
            }
            variants += [" " + text, text + " ", text + "\r\n", text.lowercased(), text.uppercased()]
            for variant in variants {
                #expect(HTTPDate.parseFixdate(variant) == HTTPDate.parseFixdateFields(variant), "\(variant.debugDescription)")
            }
            compared += variants.count
            seconds += 77_777_777.7
        }
        #expect(compared > 10_000)
        var sixFields = "Sun, 6 Nov 1994 08:49:37 GMT"
        #expect(sixFields.withUTF8(HTTPDate.parseExactFixdate) == nil)
        #expect(HTTPDate.parseFixdate("Mon, 31 Nov 2026 00:00:00 GMT") == nil)
        #expect(HTTPDate.parseFixdate("Tue, 29 Feb 2028 23:59:59 GMT") == Date(timeIntervalSince1970: 1_835_481_599))
        #expect(HTTPDate.parseFixdate("Tue, 29 Feb 2100 23:59:59 GMT") == nil)
    }

    @Test func numbersAreFormattedAsPrintfFormatsThem() {
        for value in [0.0, 0.04, 0.05, 0.25, 1.95, 9.99, 12.345, 999.95, -1.25] {
            #expect(CFormat.string("%.1f s", value) == String(format: "%.1f s", value))
            #expect(CFormat.string("%5.1f%%", value) == String(format: "%5.1f%%", value))
        }
        #expect(CFormat.string("%02d", 7) == "07")
        #expect(CFormat.string("%%%02X", UInt8(0x0A)) == "%0A")
        #expect(CFormat.string("\\u%04X", UInt32(0x1F)) == "\\u001F")
        #expect(MirrorSummary.formatBytes(1_234_567) == "1.2 MB")
    }

    @Test func trimmingAndPercentEncodingAgreeWithFoundation() {
        let texts = [" a b ", "\t\u{A0}x\u{2003}", "\n\r x \u{2028}", "\u{85}y\u{85}", "", "   ", "é\u{301} ", " \u{1F600}\n"]
        for text in texts {
            #expect(text.trimming(.spaces) == text.trimmingCharacters(in: .whitespaces), "\(text.debugDescription)")
            #expect(text.trimming(.spacesAndNewlines) == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(text.debugDescription)")
        }
        for text in ["a%20b", "%E2%82%AC", "%e2%82%ac", "%", "%2", "%zz", "%FF", "plain", "100%25", "%C3%A9t%C3%A9"] {
            #expect(text.percentDecoded == text.removingPercentEncoding, "\(text)")
        }
        // What the tag's path segment was before (alphanumerics and -._~ kept), for ASCII text.
        var kept = CharacterSet.alphanumerics
        kept.insert(charactersIn: "-._~")
        for text in ["cats", "cats and dogs", "a/b?c#d", "100%", "~user.name_x-y", "a+b&c=d"] {
            #expect(text.percentEncodedSegment == text.addingPercentEncoding(withAllowedCharacters: kept), "\(text)")
        }
        // Letters beyond ASCII are encoded now (RFC 3986), where Foundation left them raw.
        #expect("café".percentEncodedSegment == "caf%C3%A9")
        #expect("😀".percentEncodedSegment == "%F0%9F%98%80")
    }

    @Test func aTildeIsExpandedAsNSStringExpandsIt() {
        let home = ProcessInfo.processInfo.environment["HOME"] ?? "/root"
        for path in ["~", "~/.config/mirror/client-id", "~root/x", "/etc/~x", "x~", "~nosuchuser-mirror/x"] {
            #expect(HomeDirectory.expandingTilde(in: path) == NSString(string: path).expandingTildeInPath, "\(path)")
        }
        #expect(HomeDirectory.expandingTilde(in: "~/a", environment: ["HOME": "/home/ann/"]) == "/home/ann/a")
        #expect(HomeDirectory.expandingTilde(in: "~/a", environment: ["HOME": home]) == home + "/a")
    }

    @Test func jsonValuesReadWhatJSONSerializationReads() throws {
        let text = #"{"data": {"error": {"message": "Over capacity"}}, "status": 403, "errors": [{"code": "1203"}], "f": 1.5, "n": null, "b": true}"#
        let value = try #require(JSONValue.parse(Array(text.utf8)))
        #expect(value["data"]?["error"]?["message"]?.string == "Over capacity")
        #expect(value["status"]?.integer == 403)
        #expect(value["f"]?.integer == nil)
        #expect(value["b"] == .bool(true) && value["n"] == .null)
        #expect(value["errors"]?.array?.first?["code"]?.string == "1203")
        #expect(JSONValue.parse(Array("{not json".utf8)) == nil)
        #expect(ImgurError.bodyStatus(Array(text.utf8)) == 403)
        #expect(ImgurError.message(fromBody: Array(text.utf8)) == "Over capacity")
    }

    @Test func momentsAreRFC3339sAndNothingAfterOrAround() {
        let utc = { (text: String) in ISO8601DateFormatter().date(from: text) }
        #expect(DateBound.moment("2026-01-31") == utc("2026-01-31T00:00:00Z"))
        #expect(DateBound.moment("2026-01-31T12:00:00Z") == utc("2026-01-31T12:00:00Z"))
        #expect(DateBound.moment("2026-01-31t12:00:00z") == utc("2026-01-31T12:00:00Z"))
        #expect(DateBound.moment("2026-01-31T12:00:00+01:00") == utc("2026-01-31T11:00:00Z"))
        #expect(DateBound.moment("2026-01-31T12:00:00-0230") == utc("2026-01-31T14:30:00Z"))
        #expect(DateBound.moment("2026-01-31T12:00:00.5Z") == utc("2026-01-31T12:00:00Z")!.addingTimeInterval(0.5))
        for bad in ["2026-01-31T12:00:00Zjunk", "2026-01-31T12:00:00+01", "2026-01-31T24:00:00Z", "2026-02-30",
                    "2026-13-01", "2026-01-31T12:00:00", "2026-01-31T12:00:00.Z", "2026-01-31 12:00:00Z", "2026-1-31",
                    "+026-01-31", "2026-01-31T12:60:00Z"] {
            #expect(DateBound.moment(bad) == nil, "\(bad)")
        }
    }

    /// FoundationEssentials' JSONDecoder traps on a document that ends just past 512 levels; a
    /// body or config file chooses its depth. In a child process, so that a trap fails this test
    /// instead of ending the whole run.
    @Test func aDocumentNestedDeeperThanAnyAnswerIsRefusedNotACrash() async {
        await #expect(processExitsWith: .success) {
            for depth in [65, 513, 600] {
                let body = Array(String(repeating: "[", count: depth).utf8) + Array(String(repeating: "]", count: depth).utf8)
                #expect(JSONValue.parse(body) == nil)
                #expect(ImgurError.bodyStatus(body) == nil)
                #expect(ImgurError.message(fromBody: body).hasPrefix("non-JSON body"))
            }
            let shallow = Array(String(repeating: "[", count: 64).utf8) + Array(String(repeating: "]", count: 64).utf8)
            #expect(JSONValue.parse(shallow) != nil)
        }
    }
}
