/// `http` mode's request: what wrk's `-H`, `-s` (method and body) and several URLs give.
package struct HTTPRequestSettings: Sendable, Equatable {
    /// The method (`GET` unless `--method`).
    package var method = "GET"
    /// Header lines (`Name: value`) added after `Host`, in order; a `Host` or `User-Agent` given here replaces
    /// the default one.
    package var headers: [String] = []
    /// The body sent with every request (`Content-Length` added), empty for none.
    package var body: [UInt8] = []
    /// Every request path in rotation (each request takes the next); empty means the config's `path` alone.
    package var paths: [String] = []

    /// Settings for a plain `GET`.
    package init() {}
}

/// A `HOST:PORT` to serve metrics on.
package struct MetricsAddress: Sendable, Equatable {
    /// The address to listen on (a loopback address unless told otherwise).
    package var host: String
    /// The port; 0 picks a free one (printed at the start).
    package var port: UInt16

    /// `host`:`port`.
    package init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }
}

extension LoadConfig {
    /// The bytes of every HTTP request in rotation, one per path: the request line, `Host`, `User-Agent`,
    /// `Accept` (each replaced by a `--header` of that name), the other headers, `Content-Length` when there is
    /// a body (or the method usually carries one), and the body.
    package var httpRequests: [[UInt8]] {
        let given = Set(http.headers.map { $0.prefix { $0 != ":" }.lowercased() })
        var common = ""
        if !given.contains("host") { common += "Host: \(hostHeader)\r\n" }
        if !given.contains("user-agent") { common += "User-Agent: loadtest\r\n" }
        if !given.contains("accept") { common += "Accept: */*\r\n" }
        for header in http.headers { common += header + "\r\n" }
        if !given.contains("content-length")
            && (!http.body.isEmpty || ["POST", "PUT", "PATCH"].contains(http.method)) {
            common += "Content-Length: \(http.body.count)\r\n"
        }
        common += "\r\n"
        return (http.paths.isEmpty ? [path] : http.paths).map { path in
            Array("\(http.method) \(path) HTTP/1.1\r\n\(common)".utf8) + http.body
        }
    }
}
