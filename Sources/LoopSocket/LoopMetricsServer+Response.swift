import FoundationEssentials

/// The endpoint's answers, each whole in one buffer (one write): the status line, the headers, the body.
extension MetricsRequest {
    /// The response to this request; `closing` when the connection ends after it (the request asked for
    /// that, or it reached the connection's request limit), which the response then says
    /// (`Connection: close`). `page` gives the body of a `200`, and is called for nothing else; a `HEAD`
    /// gets the headers a `GET` would, without the body.
    func response(closing: Bool, page: () -> Data) -> Data {
        let connection = closing ? "Connection: close\r\n" : ""
        switch self {
        case .page(let headOnly, _):
            let body = page()
            var response = Data(("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                                 + "\(connection)Content-Length: \(body.count)\r\n\r\n").utf8)
            if !headOnly { response.append(body) }
            return response
        case .notFound(let headOnly, _):
            let body = "metrics are at /metrics\r\n"
            return Data(("HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n\(connection)"
                         + "Content-Length: \(body.utf8.count)\r\n\r\n\(headOnly ? "" : body)").utf8)
        case .methodNotAllowed:
            return Data("HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\n\(connection)Content-Length: 0\r\n\r\n".utf8)
        case .badRequest:
            return Data("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".utf8)
        }
    }
}
