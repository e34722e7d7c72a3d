/// Parses one request head (RFC 9112 §2–§7), strictly: what it cannot frame for certain it refuses.
///
/// A pure function of the bytes buffered so far, so it is tested on its own (HTTPHeadParserTests) and
/// called again with more bytes while the head is incomplete.
enum HTTPHeadParser {
    enum Outcome: Equatable {
        /// No complete head yet (and not over the limit).
        case incomplete
        /// A head of `length` bytes (with any empty lines before it and the final empty line).
        case complete(HTTPRequestHead, length: Int)
        case failed(HTTPFailure)
    }

    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A

    /// Parses the head at the start of `bytes`; heads longer than `maxLength` fail with 431.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>, maxLength: Int) -> Outcome {
        // RFC 9112 §2.2: empty lines before the request line are ignored.
        var start = 0
        while start + 1 < bytes.count, bytes[start] == cr, bytes[start + 1] == lf { start += 2 }
        guard let end = headEnd(bytes, from: start) else {
            return bytes.count - start > maxLength ? .failed(.headerTooLarge) : .incomplete
        }
        guard end - start <= maxLength else { return .failed(.headerTooLarge) }
        switch parseHead(UnsafeBufferPointer(rebasing: bytes[start..<end - 2])) {
        case .success(let head): return .complete(head, length: end)
        case .failure(let failure): return .failed(failure)
        }
    }

    /// The index just past the first `CRLF CRLF` at or after `from`, or nil.
    static func headEnd(_ bytes: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        var i = from
        while i + 3 < bytes.count {
            if bytes[i + 3] != lf {
                i += bytes[i + 3] == cr ? 1 : 4  // no CRLFCRLF can end before i + 4 unless byte i+3 is CR or LF
                continue
            }
            if bytes[i] == cr && bytes[i + 1] == lf && bytes[i + 2] == cr { return i + 4 }
            i += 1
        }
        return nil
    }

    /// Parses the request line and header lines of `head` (each line ends with CRLF).
    static func parseHead(_ head: UnsafeBufferPointer<UInt8>) -> Result<HTTPRequestHead, HTTPFailure> {
        var lines = LineIterator(bytes: head)
        guard let requestLine = lines.next() else { return .failure(.badRequest) }
        guard let line = requestLine else { return .failure(.badRequest) }
        var request = HTTPRequestHead()
        switch parseRequestLine(line, into: &request) {
        case .success: break
        case .failure(let failure): return .failure(failure)
        }
        var fields = HTTPFieldSummary()
        while let next = lines.next() {
            guard let line = next else { return .failure(.badRequest) }
            if let failure = fields.add(line) { return .failure(failure) }
        }
        return fields.apply(to: request)
    }

    /// `method SP request-target SP HTTP-version`.
    static func parseRequestLine(_ line: UnsafeBufferPointer<UInt8>, into request: inout HTTPRequestHead) -> Result<Void, HTTPFailure> {
        guard let firstSpace = line.firstIndex(of: 0x20), firstSpace > 0,
              line[..<firstSpace].allSatisfy(isTokenByte) else { return .failure(.badRequest) }
        let afterMethod = firstSpace + 1
        guard let secondSpace = line[afterMethod...].firstIndex(of: 0x20), secondSpace > afterMethod,
              line[afterMethod..<secondSpace].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return .failure(.badRequest) }
        let version = line[(secondSpace + 1)...]
        // "HTTP/" DIGIT "." DIGIT, exactly.
        guard version.count == 8, version.starts(with: Array("HTTP/".utf8)),
              case let major = version[version.startIndex + 5], case let minor = version[version.startIndex + 7],
              isDigit(major), version[version.startIndex + 6] == UInt8(ascii: "."), isDigit(minor)
        else { return .failure(.badRequest) }
        guard major == UInt8(ascii: "1") else { return .failure(.versionNotSupported) }
        request.isHTTP10 = minor == UInt8(ascii: "0")
        request.isHead = firstSpace == 4 && line.starts(with: Array("HEAD".utf8))
        return .success(())
    }

    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// `tchar` (RFC 9110 §5.6.2).
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }

    /// The lines of a head, each without its CRLF; a line with a bare CR or LF is `nil` (malformed).
    struct LineIterator {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0

        mutating func next() -> UnsafeBufferPointer<UInt8>?? {
            guard position < bytes.count else { return nil }
            var i = position
            while i < bytes.count {
                if bytes[i] == HTTPHeadParser.lf { position = bytes.count; return .some(nil) }
                if bytes[i] == HTTPHeadParser.cr {
                    guard i + 1 < bytes.count, bytes[i + 1] == HTTPHeadParser.lf else {
                        position = bytes.count
                        return .some(nil)
                    }
                    let line = UnsafeBufferPointer(rebasing: bytes[position..<i])
                    position = i + 2
                    return .some(line)
                }
                i += 1
            }
            position = bytes.count
            return .some(nil)  // the last line lacks its CRLF
        }
    }
}
