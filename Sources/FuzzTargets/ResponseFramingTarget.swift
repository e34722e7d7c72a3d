import HTTPHello
import LoadTest

/// loadtest's response framing: the reads HTTPConnection queues on its socket (the head to CRLF CRLF within
/// 64 KiB, then the body by its length, or chunk by chunk: a size line to CRLF within 8 KiB, the chunk and its
/// CRLF, trailer lines to the empty one), replayed here over a buffer, each read as GCDAsyncSocket completes
/// it. HTTPConnection itself is a socket delegate; these are the same calls in the same order.
///
/// Input: a response, head and body. Properties: no read is larger than its limit (a chunk is at most
/// `HTTPChunkLine.maxChunkSize` and its CRLF); and where http-hello's request body decoder, a second
/// implementation of chunked framing, reads the same chunked body, the two never disagree on where it ends
/// (one done while the other wants more, or both done at different places).
enum ResponseFramingTarget {
    enum Framing: Equatable {
        /// The response ends before this index.
        case complete(Int)
        case needMore
        case bad(String)
    }

    static let maxHead = 64 * 1024

    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        let bytes = Array(data)
        var largestRead = 0
        let framing = frame(bytes, largestRead: &largestRead)
        try check(largestRead <= max(maxHead, HTTPChunkLine.maxChunkSize + 2), "a read of \(largestRead) bytes")
        if case .complete(let end) = framing { try check(end <= bytes.count, "complete at \(end) of \(bytes.count)") }

        // The chunked body, framed by http-hello's decoder as well.
        guard let headEnd = MetricsRequestTarget.firstRange(of: MetricsRequestTarget.headEnd, in: bytes),
              let head = bytes.withUnsafeBytes({ HTTPResponseHead.parse($0.bytes(upTo: headEnd)) }),
              head.hasChunkedBody else { return }
        var decoder = HTTPBodyDecoder(.chunked)
        let (used, outcome) = bytes.withUnsafeBufferPointer { decoder.consume(UnsafeBufferPointer(rebasing: $0[headEnd...])) }
        switch (framing, outcome) {
        case (.complete(let end), .done):
            try check(end == headEnd + used, "loadtest ends the chunked body at \(end - headEnd), http-hello at \(used)")
        case (.complete(let end), .needMore):
            throw PropertyFailure("loadtest ends the chunked body at \(end - headEnd), http-hello wants more")
        case (.needMore, .done):
            throw PropertyFailure("http-hello ends the chunked body at \(used), loadtest wants more")
        default:
            break
        }
    }

    /// The reads HTTPConnection makes for one response, over `bytes`.
    static func frame(_ bytes: [UInt8], largestRead: inout Int) -> Framing {
        var reader = Reader(bytes: bytes)
        guard let head = reader.read(to: MetricsRequestTarget.headEnd, maxLength: maxHead) else {
            return reader.failed ? .bad("no head end within \(maxHead) bytes") : .needMore
        }
        guard let parsed = head.withUnsafeBytes({ HTTPResponseHead.parse($0) }) else { return .bad("malformed head") }
        defer { largestRead = reader.largestRead }
        if parsed.hasChunkedBody {
            while true {
                guard let line = reader.read(to: [13, 10], maxLength: Int(HTTPChunkLine.maxLineLength)) else {
                    return reader.failed ? .bad("a size line over the limit") : .needMore
                }
                guard let size = line.withUnsafeBytes({ HTTPChunkLine.size($0) }) else { return .bad("size line") }
                if size == 0 { break }
                guard let chunk = reader.read(length: size + 2) else { return .needMore }
                guard chunk.withUnsafeBytes({ HTTPChunkLine.endsChunk($0) }) else { return .bad("no CRLF after a chunk") }
            }
            while true {
                guard let line = reader.read(to: [13, 10], maxLength: Int(HTTPChunkLine.maxLineLength)) else {
                    return reader.failed ? .bad("a trailer line over the limit") : .needMore
                }
                if line.withUnsafeBytes({ HTTPChunkLine.endsTrailers($0) }) { return .complete(reader.offset) }
            }
        }
        if parsed.bodyLength > 0 {
            guard reader.read(length: parsed.bodyLength) != nil else { return .needMore }
        }
        return .complete(reader.offset)
    }

    /// GCDAsyncSocket's reads over a buffer: to a separator within a maximum length (the separator included;
    /// failing once the maximum has arrived without it), or an exact length.
    struct Reader {
        let bytes: [UInt8]
        var offset = 0
        var failed = false
        var largestRead = 0

        mutating func read(to separator: [UInt8], maxLength: Int) -> ArraySlice<UInt8>? {
            let available = bytes[offset...]
            let window = available.prefix(maxLength)
            guard let end = MetricsRequestTarget.firstRange(of: separator, in: window) else {
                if window.count >= maxLength { failed = true }
                return nil
            }
            return take(end)
        }

        mutating func read(length: Int) -> ArraySlice<UInt8>? {
            bytes.count - offset >= length ? take(length) : nil
        }

        private mutating func take(_ count: Int) -> ArraySlice<UInt8> {
            largestRead = max(largestRead, count)
            defer { offset += count }
            return bytes[offset..<offset + count]
        }
    }
}
