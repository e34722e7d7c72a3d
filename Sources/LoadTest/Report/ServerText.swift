/// Bytes a server sent, made safe to print in a report or an error: printable ASCII stays as it is, a
/// backslash is doubled, and every other byte (control characters such as ESC, which a terminal would obey,
/// and bytes above 0x7E) is written `\xNN`. Cut to `limit` bytes of input, with `…` after a cut.
enum ServerText {
    /// `bytes`, escaped, at most `limit` of them.
    static func escaped(_ bytes: some Collection<UInt8>, limit: Int = 200) -> String {
        var text = ""
        text.reserveCapacity(min(bytes.count, limit))
        for byte in bytes.prefix(limit) {
            switch byte {
            case UInt8(ascii: "\\"): text += "\\\\"
            case 0x20...0x7E: text.unicodeScalars.append(Unicode.Scalar(byte))
            default: text += "\\x" + hex(byte >> 4) + hex(byte & 0xF)
            }
        }
        if bytes.count > limit { text += "…" }
        return text
    }

    /// `text` (from a server), escaped byte by byte as UTF-8.
    static func escaped(_ text: some StringProtocol, limit: Int = 200) -> String {
        escaped(Array(text.utf8), limit: limit)
    }

    private static func hex(_ nibble: UInt8) -> String {
        String(UnicodeScalar(nibble < 10 ? 0x30 + nibble : 0x41 + nibble - 10))
    }
}
