/// The lines of a chunked HTTP/1.1 body (`Transfer-Encoding: chunked`, RFC 9112 section 7.1): each chunk is
/// announced by a size line (hexadecimal, perhaps with `;name=value` extensions, which are ignored), followed by
/// its bytes and CRLF; a size of 0 ends the chunks, and trailer fields follow until an empty line. Parsed
/// straight from the bytes, as ``HTTPResponseHead`` is.
package enum HTTPChunkLine {
    /// The largest chunk loadtest reads (a bigger size is counted as a bad response, not allocated).
    package static let maxChunkSize = 64 << 20
    /// The longest size line (with extensions) or trailer line loadtest reads.
    package static let maxLineLength: UInt = 8 * 1024

    /// The chunk size announced by `line` (ending in CRLF); nil if it is not a size line: no hex digits, a
    /// number above ``maxChunkSize``, or junk that is neither whitespace nor an extension after it.
    package static func size(_ line: UnsafeRawBufferPointer) -> Int? {
        let n = line.count
        guard n >= 3, line[n - 2] == UInt8(ascii: "\r"), line[n - 1] == UInt8(ascii: "\n") else { return nil }
        var i = 0
        var size = 0
        while i < n - 2, let digit = hexValue(line[i]) {
            size = size * 16 + digit
            guard size <= maxChunkSize else { return nil }
            i += 1
        }
        guard i > 0 else { return nil }
        while i < n - 2 && (line[i] == UInt8(ascii: " ") || line[i] == UInt8(ascii: "\t")) { i += 1 }
        guard i == n - 2 || line[i] == UInt8(ascii: ";") else { return nil }
        // An extension runs to the end of the line; a bare CR or LF inside it is not allowed.
        while i < n - 2 {
            guard line[i] != UInt8(ascii: "\r") && line[i] != UInt8(ascii: "\n") else { return nil }
            i += 1
        }
        return size
    }

    /// Whether `data`, a chunk's bytes as read with the CRLF that must follow them, does end in CRLF.
    package static func endsChunk(_ data: UnsafeRawBufferPointer) -> Bool {
        data.count >= 2 && data[data.count - 2] == UInt8(ascii: "\r") && data[data.count - 1] == UInt8(ascii: "\n")
    }

    /// Whether a trailer `line` (ending in CRLF) is the empty line that ends the body.
    package static func endsTrailers(_ line: UnsafeRawBufferPointer) -> Bool {
        line.count == 2 && endsChunk(line)
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return Int(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return Int(byte - UInt8(ascii: "A")) + 10
        default: return nil
        }
    }
}
