import Glibc

/// Parses one request head (RFC 9112 §2–§7), strictly: what it cannot frame for certain it refuses.
///
/// Lines end with CRLF or, as RFC 9112 §2.2 lets a recipient accept (and nginx does), a bare LF; a CR
/// anywhere but before an LF is refused. A request line that is not HTTP is refused as soon as it ends, not
/// when the head is complete: a peer that sends one line of garbage and waits (a TLS test tool, a confused
/// client) gets its 400 at once rather than at the header timeout.
///
/// A pure function of the bytes buffered so far, so it is tested on its own (HTTPHeadParserTests) and
/// called again with more bytes while the head is incomplete.
package enum HTTPHeadParser {
    package enum Outcome: Equatable {
        /// No complete head yet (and not over the limit).
        case incomplete
        /// A head of `length` bytes (with any empty lines before it and the final empty line).
        case complete(HTTPRequestHead, length: Int)
        case failed(HTTPFailure)
    }

    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A

    /// The most header fields a head may have by default (``HTTPHelloServer/Configuration/maxHeaderFields``).
    package static let defaultMaxFields = 100

    /// How far an earlier call got on the same, shorter, incomplete head, so that the next call with more bytes
    /// searches only what is new: a peer that sends a head a byte at a time costs each byte once, not the whole
    /// head again. Small (5 bytes), so a connection can keep it beside its head deadline.
    package struct Scan: Equatable {
        /// The bytes searched for the head's end (none there): the buffer's length at the last call.
        var scanned: UInt32 = 0
        /// An LF was among them, so the request line has ended and was found valid.
        var requestLineEnded = false
    }

    /// Parses the head at the start of `bytes`; heads longer than `maxLength` (counting any empty lines before
    /// the request line) fail with 431, and so do heads with more than `maxFields` header fields.
    package static func parse(_ bytes: UnsafeBufferPointer<UInt8>, maxLength: Int, maxFields: Int = defaultMaxFields) -> Outcome {
        var scan = Scan()
        return parse(bytes, maxLength: maxLength, maxFields: maxFields, resuming: &scan)
    }

    /// ``parse(_:maxLength:maxFields:)`` resuming where the call that left `scan` stopped, on the same bytes
    /// and more; while the head is still incomplete, `scan` is updated for the next call, and once it is
    /// complete, `scan` starts afresh for the head after it.
    package static func parse(_ bytes: UnsafeBufferPointer<UInt8>, maxLength: Int, maxFields: Int, resuming scan: inout Scan) -> Outcome {
        let start = skipEmptyLines(bytes)
        // An empty line that ends in the new bytes may start up to two bytes before them ("\r" or "\n\r").
        guard let (contentEnd, end) = headEnd(bytes, from: max(start, Int(scan.scanned) - 2)) else {
            if !scan.requestLineEnded, let feed = lineFeed(bytes, from: max(start, Int(scan.scanned))) {
                // The first LF since `start` (the scanned bytes held none): the request line has ended.
                if let failure = refusedRequestLine(bytes, from: start, to: feed) { return .failed(failure) }
                scan.requestLineEnded = true
            }
            scan.scanned = UInt32(clamping: bytes.count)
            return bytes.count > maxLength ? .failed(.headerTooLarge) : .incomplete
        }
        guard end <= maxLength else { return .failed(.headerTooLarge) }
        scan = Scan()
        switch parseHead(UnsafeBufferPointer(rebasing: bytes[start..<contentEnd]), maxFields: maxFields) {
        case .success(let head): return .complete(head, length: end)
        case .failure(let failure): return .failed(failure)
        }
    }

    /// RFC 9112 §2.2: empty lines (CRLF or LF) before the request line are ignored. The index past them.
    static func skipEmptyLines(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var start = 0
        while start < bytes.count {
            if bytes[start] == lf {
                start += 1
            } else if bytes[start] == cr, start + 1 < bytes.count, bytes[start + 1] == lf {
                start += 2
            } else {
                break
            }
        }
        return start
    }

    /// The first LF at or after `from`, found by `memchr`, or nil.
    static func lineFeed(_ bytes: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        guard from < bytes.count, let base = bytes.baseAddress,
              let found = memchr(base + from, Int32(lf), bytes.count - from) else { return nil }
        return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }

    /// Where the first empty line at or after `from` starts (`contentEnd`: the head's lines end there) and
    /// the index just past it (`end`), or nil: an LF whose line is empty, that is, an LF right after the
    /// previous line's LF, with or without a CR between.
    static func headEnd(_ bytes: UnsafeBufferPointer<UInt8>, from: Int) -> (contentEnd: Int, end: Int)? {
        var next = from
        while let feed = lineFeed(bytes, from: next) {
            var lineStart = feed
            if lineStart > from && bytes[lineStart - 1] == cr { lineStart -= 1 }
            if lineStart > from && bytes[lineStart - 1] == lf { return (lineStart, feed + 1) }
            next = feed + 1
        }
        return nil
    }

    /// The failure of the request line `bytes[start...feed]` (`feed` is its LF), or nil: it is a valid one.
    static func refusedRequestLine(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to feed: Int) -> HTTPFailure? {
        var lines = LineIterator(bytes: UnsafeBufferPointer(rebasing: bytes[start...feed]))
        guard case .some(.some(let line)) = lines.next() else { return .badRequest }
        var request = HTTPRequestHead()
        if case .failure(let failure) = parseRequestLine(line, into: &request) { return failure }
        return nil
    }

    /// Parses the request line and header lines of `head` (each line ends with CRLF or LF); more than
    /// `maxFields` header fields fail with 431.
    static func parseHead(_ head: UnsafeBufferPointer<UInt8>, maxFields: Int) -> Result<HTTPRequestHead, HTTPFailure> {
        var lines = LineIterator(bytes: head)
        guard let requestLine = lines.next() else { return .failure(.badRequest) }
        guard let line = requestLine else { return .failure(.badRequest) }
        var request = HTTPRequestHead()
        switch parseRequestLine(line, into: &request) {
        case .success: break
        case .failure(let failure): return .failure(failure)
        }
        // A field line has at least 3 bytes ("a:" and its LF): only a head that long can have too many, and
        // only such a head pays for counting them.
        if head.count > 3 * maxFields, fieldLines(head) > maxFields { return .failure(.tooManyFields) }
        var fields = HTTPFieldSummary()
        while let next = lines.next() {
            guard let line = next else { return .failure(.badRequest) }
            if let failure = fields.add(line) { return .failure(failure) }
        }
        return fields.apply(to: request)
    }

    /// The header field lines of `head` (its LFs but the request line's; `head` ends with its last field's
    /// line end).
    static func fieldLines(_ head: UnsafeBufferPointer<UInt8>) -> Int {
        var count = -1
        var next = 0
        while let feed = lineFeed(head, from: next) {
            count += 1
            next = feed + 1
        }
        return count
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

    /// The lines of a head, each without its CRLF or LF; a line with a bare CR, or the last one without its
    /// line end, is `nil` (malformed).
    struct LineIterator {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0

        mutating func next() -> UnsafeBufferPointer<UInt8>?? {
            guard position < bytes.count else { return nil }
            var i = position
            while i < bytes.count {
                if bytes[i] == HTTPHeadParser.lf {
                    let line = UnsafeBufferPointer(rebasing: bytes[position..<i])
                    position = i + 1
                    return .some(line)
                }
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
            return .some(nil)  // the last line lacks its line end
        }
    }
}
