/// What http-hello needs to know of a request's head (RFC 9112): how its body is framed, whether the
/// connection stays open, and whether the response carries a body.
package struct HTTPRequestHead: Equatable {
    /// How the request's body is delimited (RFC 9112 §6.3).
    package enum Body: Equatable {
        case none
        case length(Int)
        case chunked
    }

    /// `HEAD`: the response has the headers of a `GET` and no body.
    var isHead = false
    /// `HTTP/1.0`: the connection persists only with `Connection: keep-alive`, which the response repeats.
    var isHTTP10 = false
    /// Whether the connection stays open after the response.
    var keepAlive = true
    package var body = Body.none
    /// `Expect: 100-continue` on an HTTP/1.1 request with a body: the client waits for `100 Continue`.
    var expectsContinue = false
}

/// Why a request is refused; the response is sent, then the connection closed.
package enum HTTPFailure: Error, Equatable {
    /// Malformed request line or header, missing or repeated `Host`, bad or conflicting framing: 400.
    case badRequest
    /// The head is longer than the limit: 431.
    case headerTooLarge
    /// A major version other than 1: 505.
    case versionNotSupported
    /// A transfer coding other than `chunked`: 501.
    case notImplemented

    var statusLine: String {
        switch self {
        case .badRequest: "400 Bad Request"
        case .headerTooLarge: "431 Request Header Fields Too Large"
        case .versionNotSupported: "505 HTTP Version Not Supported"
        case .notImplemented: "501 Not Implemented"
        }
    }
}
