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
package enum HTTPFailure: Error, Equatable, CaseIterable {
    /// Malformed request line or header, missing or repeated `Host`, a repeated `Content-Length` (even with
    /// the same value, as nginx refuses it), bad or conflicting framing: 400.
    case badRequest
    /// The head is longer than the limit: 431.
    case headerTooLarge
    /// The head has more header fields than the limit: 431.
    case tooManyFields
    /// The head did not arrive within the head timeout: 408.
    case requestTimeout
    /// A major version other than 1: 505.
    case versionNotSupported
    /// A transfer coding other than `chunked`: 501.
    case notImplemented

    /// The `reason` label of http-hello's `http_hello_refused_total` counter.
    var metricReason: String {
        switch self {
        case .badRequest: "bad_request"
        case .headerTooLarge: "head_too_large"
        case .tooManyFields: "too_many_fields"
        case .requestTimeout: "head_timeout"
        case .versionNotSupported: "version"
        case .notImplemented: "transfer_coding"
        }
    }

    var statusLine: String {
        switch self {
        case .badRequest: "400 Bad Request"
        case .headerTooLarge, .tooManyFields: "431 Request Header Fields Too Large"
        case .requestTimeout: "408 Request Timeout"
        case .versionNotSupported: "505 HTTP Version Not Supported"
        case .notImplemented: "501 Not Implemented"
        }
    }
}
