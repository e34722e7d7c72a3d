import LoadTest

/// loadtest's HTTP response head parser, `HTTPResponseHead.parse(_:)`, which reads a head up to and with its
/// CRLF CRLF, against a reference written here the slow way (strings, whole lines).
///
/// Input: a response head as the socket delivers it (the bytes up to the first CRLF CRLF; an input without one
/// is used whole, as a head cut short). Properties: the parser and the reference agree on whether the head is
/// usable and on every field; the body length is never negative; `HTTPResponseHead.scan(_:)`, which finds the
/// head and parses it in one pass over the whole input, finds it where the first CRLF CRLF ends and reads the
/// same fields (or none where there is no CRLF CRLF).
enum ResponseHeadTarget {
    static func run(_ data: UnsafeRawBufferPointer) throws(PropertyFailure) {
        let found = MetricsRequestTarget.firstRange(of: MetricsRequestTarget.headEnd, in: data)
        let end = found ?? data.count
        let head = data.bytes(upTo: end)
        let parsed = HTTPResponseHead.parse(head)
        let expected = reference(Array(head))
        try check(parsed.map(Fields.init) == expected, "parse: \(String(describing: parsed)), reference: \(String(describing: expected))")
        let scanned = HTTPResponseHead.scan(data)
        if found != nil {
            let expectedScan = parsed.map { HTTPResponseHead.Scan.head($0, length: end) } ?? .malformed
            try check(scanned == expectedScan, "scan: \(scanned), parse: \(String(describing: parsed)) ending at \(end)")
        } else if case .head = scanned {
            throw PropertyFailure("scan found a head without CRLF CRLF: \(scanned)")
        }
        if let parsed {
            try check(parsed.bodyLength >= 0, "body length \(parsed.bodyLength)")
            if parsed.hasChunkedBody { try check(parsed.bodyLength == 0, "a chunked body with a length") }
        }
    }

    /// What the parser reads from a head.
    struct Fields: Equatable {
        var status: Int
        var contentLength: Int?
        var chunked: Bool
        var closes: Bool

        init(status: Int, contentLength: Int?, chunked: Bool, closes: Bool) {
            (self.status, self.contentLength, self.chunked, self.closes) = (status, contentLength, chunked, closes)
        }

        init(_ head: HTTPResponseHead) {
            self.init(status: head.status, contentLength: head.contentLength, chunked: head.chunked, closes: head.closes)
        }
    }

    /// The head's fields, read line by line; nil if it is not a well-formed HTTP/1.x response head. Lenient
    /// where the parser is: a bare CR may end the status code (the parser takes it for the line's end).
    static func reference(_ bytes: [UInt8]) -> Fields? {
        let lines = split(bytes)
        guard let status = lines.first, status.count >= 12,
              lowercased(Array(status[0..<7])) == Array("http/1.".utf8), status[8] == 0x20,
              let code = Int(String(decoding: status[9..<12], as: UTF8.self)),
              status[9..<12].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), code >= 100,
              status.count == 12 || status[12] == 0x20 || status[12] == 0x0D else { return nil }
        let http10 = status[7] == UInt8(ascii: "0")
        var head = Fields(status: code, contentLength: nil, chunked: false, closes: http10)
        for line in lines.dropFirst() {
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let name = lowercased(Array(line[..<colon]))
            let value = trimmed(Array(line[(colon + 1)...]))
            switch String(decoding: name, as: UTF8.self) {
            case "content-length":
                guard !value.isEmpty, value.count <= 18, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                      let length = Int(String(decoding: value, as: UTF8.self)) else { return nil }
                if let earlier = head.contentLength, earlier != length { return nil }
                head.contentLength = length
            case "transfer-encoding":
                if contains(value, "chunked") { head.chunked = true }
            case "connection":
                if contains(value, "close") { head.closes = true }
                if http10 && contains(value, "keep-alive") { head.closes = false }
            default:
                break
            }
        }
        return head
    }

    /// The lines, each without its CRLF (the last one as it is, CRLF or not).
    static func split(_ bytes: [UInt8]) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        var line: [UInt8] = []
        var i = 0
        while i < bytes.count {
            if bytes[i] == 13 && i + 1 < bytes.count && bytes[i + 1] == 10 {
                lines.append(line)
                line = []
                i += 2
            } else {
                line.append(bytes[i])
                i += 1
            }
        }
        if !line.isEmpty || lines.isEmpty { lines.append(line) }
        return lines
    }

    /// ASCII letters folded with `| 0x20`, as HTTP field names are compared (the parser folds every byte so).
    static func lowercased(_ bytes: [UInt8]) -> [UInt8] { bytes.map { $0 | 0x20 } }

    static func trimmed(_ bytes: [UInt8]) -> [UInt8] {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        return Array(bytes.drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }

    static func contains(_ value: [UInt8], _ word: String) -> Bool {
        let needle = Array(word.utf8)
        let folded = lowercased(value)
        guard folded.count >= needle.count else { return false }
        return (0...(folded.count - needle.count)).contains { folded[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}
