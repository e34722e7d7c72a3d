import EpollLoop
import FoundationEssentials
import LoopSocket
import Synchronization

/// `--metrics HOST:PORT`: Prometheus text exposition (format 0.0.4, which OpenMetrics scrapers read too) at
/// `GET /metrics`, served during the run by a listener on the run's first event loop. The coordinator
/// publishes the text once a second (``publish(_:)``); a scrape costs the loop one string copy and one write.
final class MetricsEndpoint: Sendable {
    /// The last page published, shared with the server's renderer.
    private final class Page: Sendable {
        let text = Mutex<String>("")
    }

    private let server: LoopMetricsServer
    private let page = Page()

    /// The port it listens on (the one asked for, or the one the kernel picked for port 0).
    var port: UInt16 { server.port }

    /// Listens on `address` on `loop`; throws if the address cannot be bound. With `render`, each request's
    /// page is what it returns then; without, the last one published.
    init(address: MetricsAddress, loop: EventLoop, render: (@Sendable () -> String)? = nil) throws {
        let page = self.page
        server = try LoopMetricsServer(host: address.host, port: address.port, loop: loop) {
            render?() ?? page.text.withLock { $0 }
        }
    }

    /// Replaces the page served.
    func publish(_ text: String) {
        page.text.withLock { $0 = text }
    }

    func close() {
        server.close()
    }

    /// The exposition text: counters over the whole run, the open connections, and the latency histogram of
    /// the measuring window so far as cumulative `le` buckets in seconds.
    /// `targetRate` is the open-loop rate now (with `--stages` it moves; default: `--rate`).
    static func text(config: LoadConfig, totals: WorkerSnapshot, errors: ErrorCounts, histogram: Histogram?,
                     targetRate: Double? = nil) -> String {
        var labels = "mode=\"\(config.mode.resultName)\""
        if let id = config.runID { labels += ",id=\"\(escape(id))\"" }
        var s = ""
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(String, String)]) {
            s += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for (suffixAndLabels, value) in samples { s += "\(name)\(suffixAndLabels) \(value)\n" }
        }
        metric(
            "loadtest_requests_total", "counter",
            "Requests completed (round trips, HTTP responses, churn cycles), warm-up included.",
            [("{\(labels)}", "\(totals.completed)")])
        metric(
            "loadtest_received_bytes_total", "counter", "Bytes received, warm-up included.",
            [("{\(labels)}", "\(totals.receivedBytes)")])
        metric(
            "loadtest_errors_total", "counter", "Errors by kind.",
            ErrorKind.allCases.map { ("{\(labels),kind=\"\($0.rawValue)\"}", "\(errors[$0])") })
        metric("loadtest_connections_open", "gauge", "Connections open now.", [("{\(labels)}", "\(totals.open)")])
        metric(
            "loadtest_connections_established_total", "counter", "Connections established.",
            [("{\(labels)}", "\(totals.established)")])
        metric(
            "loadtest_connections_failed_total", "counter", "Connections that could not be opened.",
            [("{\(labels)}", "\(totals.failed)")])
        if let rate = targetRate ?? config.rate {
            metric(
                "loadtest_target_rate", "gauge", "The open-loop rate asked for, requests per second.",
                [("{\(labels)}", "\(rate)")])
        }
        let h = histogram ?? Histogram()
        var samples: [(String, String)] = []
        for le in bucketBounds {
            samples.append(("_bucket{\(labels),le=\"\(le)\"}", "\(countAtOrBelow(h, nanoseconds: UInt64(le * 1e9)))"))
        }
        samples.append(("_bucket{\(labels),le=\"+Inf\"}", "\(h.count)"))
        samples.append(("_sum{\(labels)}", "\(Double(h.sum) / 1e9)"))
        samples.append(("_count{\(labels)}", "\(h.count)"))
        metric(
            "loadtest_latency_seconds", "histogram",
            "Latency in the measuring window (open loop: from the intended send time).", samples)
        return s
    }

    /// The `le` bounds, seconds: 50 µs to 10 s.
    static let bucketBounds: [Double] = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                         0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// Values recorded at or below `nanoseconds` (to the histogram's bucket precision: a bucket counts when its
    /// lowest value is).
    static func countAtOrBelow(_ h: Histogram, nanoseconds: UInt64) -> UInt64 {
        var total: UInt64 = 0
        for (index, count) in h.nonEmptyBuckets where Histogram.lowestValue(ofBucket: index) <= nanoseconds {
            total += count
        }
        return total
    }

    private static func escape(_ s: String) -> String {
        s.replacingOccurrences("\\", "\\\\").replacingOccurrences("\"", "\\\"").replacingOccurrences("\n", "\\n")
    }
}
