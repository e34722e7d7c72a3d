import FoundationEssentials

/// The bytes http-hello sends, built once per server and shared by its connections (a `Data` copy shares the
/// bytes): `200` with the body `hello` (keep-alive, closing, HTTP/1.0 keep-alive), the same heads for `HEAD`
/// without the body, `100 Continue`, and the refusals. Not `static`: a global `Data` lives until the process
/// exits, and AddressSanitizer's leak check, which cannot see through `Data`'s tagged storage reference,
/// reports it as a leak and makes a sanitized http-hello exit 1.
struct HTTPResponses: Sendable {
    let ok = response(head: false, connection: nil)
    let okClose = response(head: false, connection: "close")
    let okKeepAlive10 = response(head: false, connection: "keep-alive")
    let head = response(head: true, connection: nil)
    let headClose = response(head: true, connection: "close")
    let headKeepAlive10 = response(head: true, connection: "keep-alive")
    let `continue` = Data("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// The response to a complete request.
    func to(_ request: HTTPRequestHead) -> Data {
        switch (request.isHead, request.keepAlive, request.isHTTP10) {
        case (false, false, _): okClose
        case (false, true, false): ok
        case (false, true, true): okKeepAlive10
        case (true, false, _): headClose
        case (true, true, false): head
        case (true, true, true): headKeepAlive10
        }
    }

    /// A refusal, after which the connection closes.
    static func failure(_ failure: HTTPFailure) -> Data {
        Data("HTTP/1.1 \(failure.statusLine)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
    }

    /// A `200` whose head announces the 5-byte body; a `HEAD` response has the same head and no body
    /// (RFC 9110 §9.3.2).
    private static func response(head: Bool, connection: String?) -> Data {
        var text = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n"
        if let connection { text += "Connection: \(connection)\r\n" }
        text += "\r\n"
        if !head { text += "hello" }
        return Data(text.utf8)
    }
}
