import LoadTest

/// loadtest's chunk-size line parser, `HTTPChunkLine.size(_:)`, against a reference written here the slow way.
///
/// Input: what the socket delivers for a size line (the bytes up to and with the first CRLF; an input without
/// one is used whole). Properties: the parser and the reference agree; a size is never above
/// `HTTPChunkLine.maxChunkSize` (what loadtest would then read and buffer).
enum ChunkLineTarget {
    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        let end = MetricsRequestTarget.firstRange(of: [13, 10], in: data) ?? data.count
        let line = data.bytes(upTo: end)
        let size = HTTPChunkLine.size(line)
        let expected = reference(Array(line))
        try check(size == expected, "size: \(String(describing: size)), reference: \(String(describing: expected))")
        if let size { try check(size >= 0 && size <= HTTPChunkLine.maxChunkSize, "a chunk of \(size) bytes") }
        try check(HTTPChunkLine.endsTrailers(line) == (Array(line) == [13, 10]), "endsTrailers disagrees")
    }

    /// Hex digits (any number of leading zeros), a value within the limit, optional spaces and tabs, then the
    /// end of the line or `;` and an extension without CR or LF, then CRLF.
    static func reference(_ line: [UInt8]) -> Int? {
        guard line.count >= 3, line.suffix(2).elementsEqual([13, 10]) else { return nil }
        let content = line.dropLast(2)
        let digits = content.prefix { isHex($0) }
        guard !digits.isEmpty else { return nil }
        let significant = digits.drop { $0 == UInt8(ascii: "0") }
        guard significant.count <= 8 else { return nil }
        let value = significant.isEmpty ? 0 : Int(String(decoding: significant, as: UTF8.self), radix: 16)!
        guard value <= HTTPChunkLine.maxChunkSize else { return nil }
        let rest = content.dropFirst(digits.count).drop { $0 == 0x20 || $0 == 0x09 }
        guard rest.isEmpty || rest.first == UInt8(ascii: ";") else { return nil }
        guard !rest.contains(13) && !rest.contains(10) else { return nil }
        return value
    }

    static func isHex(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }
}
