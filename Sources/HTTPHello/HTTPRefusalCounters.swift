import Synchronization

/// How many requests http-hello refused, by ``HTTPFailure``, for its metrics page: a refusal is rare (it ends
/// its connection), so one lock over all the counts costs nothing that matters.
final class HTTPRefusalCounters: Sendable {
    private let counts = Mutex([UInt64](repeating: 0, count: HTTPFailure.allCases.count))

    /// Counts one refusal.
    func add(_ failure: HTTPFailure) {
        let index = HTTPFailure.allCases.firstIndex(of: failure)!
        counts.withLock { $0[index] &+= 1 }
    }

    /// The count of `failure`.
    func count(_ failure: HTTPFailure) -> UInt64 {
        let index = HTTPFailure.allCases.firstIndex(of: failure)!
        return counts.withLock { $0[index] }
    }

    /// `http_hello_refused_total`, one line per reason with its status code, in Prometheus' text format.
    func prometheusText() -> String {
        let snapshot = counts.withLock { $0 }
        var text = "# HELP http_hello_refused_total Requests refused (and their connections closed), by reason.\n"
            + "# TYPE http_hello_refused_total counter\n"
        for (failure, count) in zip(HTTPFailure.allCases, snapshot) {
            let status = failure.statusLine.prefix(3)
            text += "http_hello_refused_total{reason=\"\(failure.metricReason)\",status=\"\(status)\"} \(count)\n"
        }
        return text
    }
}
