/// The metrics endpoint's request reader, reachable from the fuzz targets (Sources/FuzzTargets) without
/// making ``MetricsResponder`` visible outside the package: the response to a request head as it is read from
/// the socket (up to and with its CRLF CRLF, at most 16 KiB), with a fixed page.
package enum MetricsRequestReader {
    /// The page served for `GET /metrics`.
    package static let page = "loop_lag_seconds 0\n"

    /// The response `head` gets and whether the connection stays open.
    package static func response(to head: String) -> (String, keepOpen: Bool) {
        MetricsResponder.response(to: head) { page }
    }
}
