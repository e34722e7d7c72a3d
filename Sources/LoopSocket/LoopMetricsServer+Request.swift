import FoundationEssentials

/// What a request head asks of the metrics endpoint, read from its bytes alone: a small pure function, so
/// that every request the endpoint answers went through one place a fuzzer can call
/// (`MetricsRequest.parse(_:)`), and every answer is built from the value it returns.
enum MetricsRequest: Equatable, Sendable {
    /// `GET` or `HEAD` of `/metrics` (a query is ignored); `headOnly` for `HEAD`.
    case page(headOnly: Bool, keepAlive: Bool)
    /// `GET` or `HEAD` of another path: 404.
    case notFound(headOnly: Bool, keepAlive: Bool)
    /// Another method: 405.
    case methodNotAllowed(keepAlive: Bool)
    /// Not an HTTP/1.x request head: 400, and the connection closes.
    case badRequest

    /// Whether the connection may carry another request after this one's response.
    var keepAlive: Bool {
        switch self {
        case .page(_, let keepAlive), .notFound(_, let keepAlive), .methodNotAllowed(let keepAlive): keepAlive
        case .badRequest: false
        }
    }

    /// Reads a request head: its bytes up to and including the blank line that ends it (a head without one
    /// is read as far as it goes).
    ///
    /// The request line must be `METHOD SP TARGET SP HTTP/1.0|HTTP/1.1` and each header line `name: value`
    /// with a token for a name (RFC 9112 3 and 5.1: no space before the colon), lines ending in CRLF or LF;
    /// anything else, a control character included, is ``badRequest``. The connection persists for HTTP/1.1
    /// unless a `Connection` header has the `close` token, for HTTP/1.0 only with `keep-alive` (RFC 9112
    /// 9.3), and never after a request that announces a body (`Content-Length` above 0 or any
    /// `Transfer-Encoding`): the endpoint reads no bodies, so what follows the head could not be told apart
    /// from the next request.
    static func parse(_ head: UnsafeRawBufferPointer) -> MetricsRequest {
        var lines = HeadLines(head)
        guard let requestLine = lines.next(), let parts = RequestLine(requestLine) else { return .badRequest }
        var keepAlive = parts.version == .http11
        var sawClose = false, sawKeepAlive = false
        while let line = lines.next() {
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                  line[..<colon].allSatisfy(Self.isTokenByte) else { return .badRequest }
            let name = line[..<colon], value = Self.trimmed(line[(colon + 1)...])
            if Self.equalsIgnoringCase(name, "connection") {
                for token in value.split(separator: UInt8(ascii: ",")) {
                    let token = Self.trimmed(token)
                    if Self.equalsIgnoringCase(token, "close") { sawClose = true }
                    if Self.equalsIgnoringCase(token, "keep-alive") { sawKeepAlive = true }
                }
            } else if Self.equalsIgnoringCase(name, "content-length") {
                guard !value.isEmpty, value.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                    return .badRequest
                }
                if value.contains(where: { $0 != UInt8(ascii: "0") }) { sawClose = true }
            } else if Self.equalsIgnoringCase(name, "transfer-encoding") {
                sawClose = true
            }
        }
        if lines.malformed { return .badRequest }
        if sawKeepAlive { keepAlive = true }
        if sawClose { keepAlive = false }
        switch parts.method {
        case .get, .head:
            guard parts.targetIsMetrics else { return .notFound(headOnly: parts.method == .head, keepAlive: keepAlive) }
            return .page(headOnly: parts.method == .head, keepAlive: keepAlive)
        case .other:
            return .methodNotAllowed(keepAlive: keepAlive)
        }
    }

    // MARK: Bytes

    /// RFC 9110 5.6.2's `tchar`: what a method or a header name is made of.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// `bytes` without the spaces and tabs around it.
    static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else {
            return bytes[bytes.startIndex..<bytes.startIndex]
        }
        return bytes[first...last]
    }

    /// Whether `bytes` spell `lowercase` (ASCII letters in any case).
    static func equalsIgnoringCase(_ bytes: Slice<UnsafeRawBufferPointer>, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        var i = 0
        for byte in bytes {
            let folded = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            if folded != lowercase.utf8Start[i] { return false }
            i += 1
        }
        return true
    }
}

/// The lines of a head, each without its CRLF or LF; nil at the end of the bytes, or at a line that holds a
/// control character other than a tab (a bare CR, a NUL), which ends the head as malformed.
private struct HeadLines {
    private let bytes: UnsafeRawBufferPointer
    private var position: Int

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        position = 0
    }

    /// Set when a line held a control character: ``next()`` returns nil from then on.
    private(set) var malformed = false

    /// The next line, or nil at the end (or once ``malformed``).
    mutating func next() -> Slice<UnsafeRawBufferPointer>? {
        guard !malformed, position < bytes.count else { return nil }
        let start = position
        var end = bytes.count
        var next = bytes.count
        if let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) {
            end = newline > start && bytes[newline - 1] == UInt8(ascii: "\r") ? newline - 1 : newline
            next = newline + 1
        }
        position = next
        let line = bytes[start..<end]
        if line.contains(where: { ($0 < 0x20 && $0 != UInt8(ascii: "\t")) || $0 == 0x7F }) {
            malformed = true
            return nil
        }
        return line
    }
}

/// A request line split into what the endpoint needs.
private struct RequestLine {
    enum Method { case get, head, other }
    enum Version { case http10, http11 }

    let method: Method
    let version: Version
    /// The target is `/metrics`, with or without a query.
    let targetIsMetrics: Bool

    /// Nil unless `line` is `METHOD SP TARGET SP HTTP/1.0|HTTP/1.1`, single spaces, a token for a method.
    init?(_ line: Slice<UnsafeRawBufferPointer>) {
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(MetricsRequest.isTokenByte),
              parts[1].first == UInt8(ascii: "/") || parts[1].elementsEqual("*".utf8) else { return nil }
        switch Array(parts[2]) {
        case Array("HTTP/1.1".utf8): version = .http11
        case Array("HTTP/1.0".utf8): version = .http10
        default: return nil
        }
        let method = Array(parts[0])
        self.method = method == Array("GET".utf8) ? .get : method == Array("HEAD".utf8) ? .head : .other
        let path = parts[1].prefix { $0 != UInt8(ascii: "?") }
        targetIsMetrics = path.elementsEqual("/metrics".utf8)
    }
}
