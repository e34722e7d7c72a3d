/// The header fields http-hello acts on, gathered line by line, and the checks that need all of them.
struct HTTPFieldSummary {
    var hostCount = 0
    var contentLength: Int?
    var transferEncodingCount = 0
    var unsupportedCoding = false
    var close = false
    var keepAlive = false
    var expectsContinue = false

    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09

    /// Adds one `name: value` line; returns why the request is refused, if it is.
    mutating func add(_ line: UnsafeBufferPointer<UInt8>) -> HTTPFailure? {
        // A name is a token right up to the colon: whitespace before it, or a line starting with
        // whitespace (obsolete line folding), is refused (RFC 9112 §5.1, §5.2).
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0,
              line[..<colon].allSatisfy(HTTPHeadParser.isTokenByte) else { return .badRequest }
        var from = colon + 1
        var to = line.count
        while from < to && (line[from] == Self.space || line[from] == Self.tab) { from += 1 }
        while to > from && (line[to - 1] == Self.space || line[to - 1] == Self.tab) { to -= 1 }
        let value = UnsafeBufferPointer(rebasing: line[from..<to])
        // field-value: visible characters, spaces, tabs and obs-text; no other control character.
        guard value.allSatisfy({ $0 == Self.tab || ($0 >= 0x20 && $0 != 0x7F) }) else { return .badRequest }
        let name = UnsafeBufferPointer(rebasing: line[..<colon])
        if Self.equalsIgnoringCase(name, "host") {
            hostCount += 1
        } else if Self.equalsIgnoringCase(name, "content-length") {
            guard !value.isEmpty, value.count <= 18, value.allSatisfy(HTTPHeadParser.isDigit) else { return .badRequest }
            let length = value.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            // A second Content-Length is refused even with the same value (nginx does; RFC 9110 §8.6 only
            // allows a recipient to accept it): one framing, stated once.
            if contentLength != nil { return .badRequest }
            contentLength = length
        } else if Self.equalsIgnoringCase(name, "transfer-encoding") {
            transferEncodingCount += 1
            if !Self.equalsIgnoringCase(value, "chunked") { unsupportedCoding = true }
        } else if Self.equalsIgnoringCase(name, "connection") {
            for token in value.split(separator: UInt8(ascii: ",")) {
                let trimmed = token.drop { $0 == Self.space || $0 == Self.tab }.reversed().drop { $0 == Self.space || $0 == Self.tab }.reversed()
                let bytes = Array(trimmed)
                bytes.withUnsafeBufferPointer { token in
                    if Self.equalsIgnoringCase(token, "close") { close = true }
                    if Self.equalsIgnoringCase(token, "keep-alive") { keepAlive = true }
                }
            }
        } else if Self.equalsIgnoringCase(name, "expect") {
            if Self.equalsIgnoringCase(value, "100-continue") { expectsContinue = true }
        }
        return nil
    }

    /// The head with its framing and persistence, or why it is refused.
    func apply(to request: HTTPRequestHead) -> Result<HTTPRequestHead, HTTPFailure> {
        var request = request
        // RFC 9112 §3.2: exactly one Host in HTTP/1.1, at most one before.
        if request.isHTTP10 ? hostCount > 1 : hostCount != 1 { return .failure(.badRequest) }
        if transferEncodingCount > 0 {
            // Both framings at once is how requests are smuggled past proxies (RFC 9112 §6.1); HTTP/1.0 has
            // no chunked coding; a coding other than chunked alone cannot be decoded here.
            if contentLength != nil || request.isHTTP10 || transferEncodingCount > 1 { return .failure(.badRequest) }
            if unsupportedCoding { return .failure(.notImplemented) }
            request.body = .chunked
        } else if let contentLength, contentLength > 0 {
            request.body = .length(contentLength)
        }
        request.keepAlive = request.isHTTP10 ? keepAlive && !close : !close
        request.expectsContinue = expectsContinue && !request.isHTTP10 && request.body != .none
        return .success(request)
    }

    /// Whether `bytes` is `lowercase` ignoring ASCII case (`lowercase` is lowercase ASCII).
    static func equalsIgnoringCase(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for i in 0..<bytes.count {
            let byte = bytes[i]
            let folded = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
            if folded != expected[i] { return false }
        }
        return true
    }
}
