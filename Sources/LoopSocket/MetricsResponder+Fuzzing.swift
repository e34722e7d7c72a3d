import FoundationEssentials

/// The metrics endpoint's request reader, reachable from the fuzz targets (Sources/FuzzTargets) without
/// making ``MetricsRequest`` visible outside the package: what the endpoint answers to a request head as it is
/// read from the socket (up to and with its blank line), with a fixed page.
package enum MetricsRequestReader {
    /// The page served for `GET /metrics`.
    package static let page = "loop_lag_seconds 0\n"

    /// The most bytes of a head the endpoint reads by default (``LoopMetricsServer/Configuration/maxRequestHeadBytes``).
    package static let maxHead = LoopMetricsServer.Configuration().maxRequestHeadBytes

    /// The response `head` gets, whether the connection stays open, and whether it was a `HEAD` request (its
    /// response has the headers of a `GET`'s and no body).
    package static func response(to head: UnsafeRawBufferPointer) -> (bytes: [UInt8], keepOpen: Bool, headOnly: Bool) {
        let request = MetricsRequest.parse(head)
        let response = request.response(closing: !request.keepAlive) { Data(page.utf8) }
        let headOnly: Bool
        switch request {
        case .page(let only, _), .notFound(let only, _): headOnly = only
        case .methodNotAllowed, .badRequest: headOnly = false
        }
        return (Array(response), request.keepAlive, headOnly)
    }
}
