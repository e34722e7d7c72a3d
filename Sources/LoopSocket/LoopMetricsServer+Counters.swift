/// What the metrics endpoint refused and why, appended to every page it serves as Prometheus text, so
/// that an attack on the endpoint shows on the endpoint.
struct MetricsServerCounters: Equatable, Sendable {
    /// Connections open now.
    var connectionsOpen = 0
    /// Connections closed at acceptance, over ``LoopMetricsServer/Configuration/maxConnections``.
    var connectionsRefused: UInt64 = 0
    /// Requests answered with the page (`GET` and `HEAD` of `/metrics`).
    var pagesServed: UInt64 = 0
    /// Requests answered 400 (not an HTTP/1.x head).
    var badRequests: UInt64 = 0
    /// Requests answered 404.
    var notFound: UInt64 = 0
    /// Requests answered 405.
    var methodNotAllowed: UInt64 = 0
    /// Request heads over ``LoopMetricsServer/Configuration/maxRequestHeadBytes``.
    var tooLarge: UInt64 = 0
    /// Requests that waited for the response budget (``LoopMetricsServer/Configuration/responsesPerSecond``).
    var delayed: UInt64 = 0
    /// Connections closed because a request head did not arrive in time.
    var headTimeouts: UInt64 = 0
    /// Kept-alive connections closed for waiting too long for their next request.
    var idleTimeouts: UInt64 = 0
    /// Connections closed because a response could not be sent in time.
    var sendTimeouts: UInt64 = 0
    /// Times the page closure was called (the other pages were served again from the last rendering).
    var pagesRendered: UInt64 = 0

    /// Counts the answer to `request`.
    mutating func count(_ request: MetricsRequest) {
        switch request {
        case .page: pagesServed += 1
        case .notFound: notFound += 1
        case .methodNotAllowed: methodNotAllowed += 1
        case .badRequest: badRequests += 1
        }
    }

    /// The counters in Prometheus' text format (0.0.4), each with its `HELP` and `TYPE`.
    var prometheusText: String {
        var text = ""
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(String, String)]) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for (labels, value) in samples { text += "\(name)\(labels) \(value)\n" }
        }
        metric("loop_metrics_server_connections_open", "gauge", "Connections to the metrics endpoint open now.",
               [("", "\(connectionsOpen)")])
        metric("loop_metrics_server_connections_refused_total", "counter",
               "Connections closed as soon as accepted, over the connection cap.", [("", "\(connectionsRefused)")])
        metric("loop_metrics_server_pages_served_total", "counter", "Requests answered with the metrics page.",
               [("", "\(pagesServed)")])
        metric("loop_metrics_server_pages_rendered_total", "counter",
               "Pages rendered; the other responses served the last one again.", [("", "\(pagesRendered)")])
        metric("loop_metrics_server_requests_refused_total", "counter", "Requests refused, by reason.", [
            ("{reason=\"bad_request\"}", "\(badRequests)"), ("{reason=\"not_found\"}", "\(notFound)"),
            ("{reason=\"method_not_allowed\"}", "\(methodNotAllowed)"), ("{reason=\"too_large\"}", "\(tooLarge)"),
        ])
        metric("loop_metrics_server_requests_delayed_total", "counter",
               "Requests that waited for the endpoint's response budget.", [("", "\(delayed)")])
        metric("loop_metrics_server_timeouts_total", "counter", "Connections closed by a deadline, by phase.", [
            ("{phase=\"head\"}", "\(headTimeouts)"), ("{phase=\"idle\"}", "\(idleTimeouts)"),
            ("{phase=\"send\"}", "\(sendTimeouts)"),
        ])
        return text
    }
}
