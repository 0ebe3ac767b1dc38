/// One path component made from text someone else wrote: safe to create and to show, and short
/// enough for the file system.
enum FileNameText {
    /// NAME_MAX on Linux and macOS: the bytes one path component may hold. It counts bytes of
    /// UTF-8, not characters: 100 CJK characters are 300 bytes.
    static let maximumBytes = 255

    /// `text` with `/`, `\`, NUL and every ``DisplayControl`` character replaced by `_`.
    static func replacingUnsafeCharacters(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            result.append(isUnsafe(scalar) ? "_" : scalar)
        }
        return String(result)
    }

    private static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "/" || scalar == "\\" || DisplayControl.contains(scalar)
    }

    /// `name` cut to at most `limit` bytes of UTF-8, keeping its extension when that is short.
    ///
    /// The cut falls between characters (grapheme clusters), so no accent is parted from its letter;
    /// only a first character larger than the limit by itself (a letter under a thousand combining
    /// marks) is cut between its scalars. Either way the result is whole scalars: valid UTF-8.
    static func truncated(_ name: String, toBytes limit: Int) -> String {
        guard name.utf8.count > limit else { return name }
        let (stem, suffix) = splitExtension(name)
        if !suffix.isEmpty, suffix.utf8.count <= maximumExtensionBytes, suffix.utf8.count < limit {
            let cut = prefix(of: stem, bytes: limit - suffix.utf8.count)
            if !cut.isEmpty { return cut + suffix }
        }
        return prefix(of: name[...], bytes: limit)
    }

    /// Extensions longer than this are part of the name, cut like the rest (`.tar.gz`'s `.gz` is 3).
    static let maximumExtensionBytes = 16

    /// `name.ext` → (`name`, `.ext`); a leading dot starts no extension.
    static func splitExtension(_ name: Substring) -> (stem: Substring, extension: Substring) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, name[name.endIndex...]) }
        return (name[..<dot], name[dot...])
    }

    static func splitExtension(_ name: String) -> (stem: Substring, extension: Substring) {
        splitExtension(name[...])
    }

    /// The longest run of whole characters from the start of `text` within `limit` bytes; when
    /// even the first character is larger, the longest run of its scalars that fits.
    static func prefix(of text: Substring, bytes limit: Int) -> String {
        var used = 0
        var end = text.startIndex
        while end < text.endIndex {
            let next = text.index(after: end)
            let size = text.utf8[end..<next].count
            guard used + size <= limit else { break }
            used += size
            end = next
        }
        if end == text.startIndex, let first = text.first {
            var scalars = String.UnicodeScalarView()
            for scalar in first.unicodeScalars {
                guard used + scalar.utf8.count <= limit else { break }
                used += scalar.utf8.count
                scalars.append(scalar)
            }
            return String(scalars)
        }
        return String(text[..<end])
    }
}
