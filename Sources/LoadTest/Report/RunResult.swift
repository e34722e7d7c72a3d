import FoundationEssentials

/// The figures of one run (or of several merged), as written to and read from `--json`.
///
/// Top-level keys include `requests_per_second`, `connections`, `errors` (with `total` and counts by kind),
/// `latency_us` (percentiles) and `histogram` (every non-empty bucket, in ns), so results from several
/// processes or machines can be merged without losing precision. Every key, in every mode, is in
/// docs/loadtest-report.schema.json (a test validates real reports against it): a key added here needs its
/// entry there.
package struct RunResult: Codable, Sendable, Equatable {
    /// Percentiles in microseconds.
    package struct Latency: Codable, Sendable, Equatable {
        /// Latencies recorded.
        package var count: UInt64
        /// The smallest, the mean, the percentiles (each within 0.4 % of the exact sample) and the largest.
        package var min: Double
        package var mean: Double
        package var p50: Double
        package var p90: Double
        package var p99: Double
        package var p99_9: Double
        package var p99_99: Double
        package var max: Double

        /// The percentiles of `histogram` (recorded in ns).
        package init(_ histogram: Histogram) {
            func us(_ ns: UInt64) -> Double { (Double(ns) / 1000 * 1000).rounded() / 1000 }
            count = histogram.count
            min = histogram.count == 0 ? 0 : us(histogram.min)
            mean = (histogram.mean / 1000 * 1000).rounded() / 1000
            p50 = us(histogram.percentile(50))
            p90 = us(histogram.percentile(90))
            p99 = us(histogram.percentile(99))
            p99_9 = us(histogram.percentile(99.9))
            p99_99 = us(histogram.percentile(99.99))
            max = us(histogram.max)
        }
    }

    /// The latency histogram in compact form.
    package struct HistogramData: Codable, Sendable, Equatable {
        /// The unit of the recorded values: always nanoseconds.
        package var unit = "ns"
        /// The histogram's precision (see ``Histogram/subBucketBits``); results merge only with equal precision.
        package var subBucketBits = Histogram.subBucketBits
        /// Values recorded, the smallest and largest, and their sum (for the mean).
        package var count: UInt64
        package var min: UInt64
        package var max: UInt64
        package var sum: UInt64
        /// `[bucket index, count]` pairs of the non-empty buckets; a bucket's values are described by
        /// `Histogram.lowestValue(ofBucket:)` and `Histogram.width(ofBucket:)`.
        package var buckets: [[UInt64]]

        enum CodingKeys: String, CodingKey {
            case unit, subBucketBits = "sub_bucket_bits", count, min, max, sum, buckets
        }

        /// The compact form of `histogram`.
        package init(_ histogram: Histogram) {
            count = histogram.count
            min = histogram.count == 0 ? 0 : histogram.min
            max = histogram.max
            sum = histogram.sum
            buckets = histogram.nonEmptyBuckets.map { [UInt64($0.index), $0.count] }
        }

        /// The histogram back; nil if the data is inconsistent.
        package var histogram: Histogram? {
            guard unit == "ns" else { return nil }
            var pairs: [(index: Int, count: UInt64)] = []
            for pair in buckets {
                guard pair.count == 2, pair[0] < UInt64(Histogram.bucketCount) else { return nil }
                pairs.append((Int(pair[0]), pair[1]))
            }
            return Histogram(buckets: pairs, min: min, max: max, sum: sum, subBucketBits: subBucketBits)
        }
    }

    /// Errors: the total and the non-zero counts by kind (see ``ErrorKind``).
    package struct Errors: Codable, Sendable, Equatable {
        /// All errors.
        package var total: UInt64
        /// The non-zero counts, keyed by ``ErrorKind`` raw values (`refused`, `reset`, `timeout`, `mismatch`, …).
        package var byKind: [String: UInt64]
        /// The first error's text, for a hint at what went wrong.
        package var first: String?

        enum CodingKeys: String, CodingKey {
            case total, byKind = "by_kind", first
        }

        /// The counts and the first error's text.
        package init(_ counts: ErrorCounts, first: String?) {
            total = counts.total
            byKind = counts.byName
            self.first = first
        }
    }

    /// One second of the run.
    package struct Sample: Codable, Sendable, Equatable {
        /// Seconds since the load started (the end of this sample).
        package var t: Double
        /// Requests completed and MiB received per second during the sample.
        package var requestsPerSecond: Double
        package var mibPerSecond: Double
        /// Connections open at the end of the sample.
        package var connections: Int
        /// Errors counted so far (cumulative).
        package var errors: UInt64
        /// Whether the sample lies in the warm-up (before the measuring window).
        package var warmup: Bool
        /// With `--server-pid`: the server's resident memory at the end of the sample, MiB.
        package var serverRSSMiB: Double?
        /// Open loop: the target rate over the sample (with `--stages`, its mean over the sample's time).
        package var targetRate: Double?

        enum CodingKeys: String, CodingKey {
            case t, requestsPerSecond = "requests_per_second", mibPerSecond = "mib_per_second", connections, errors,
                warmup
            case serverRSSMiB = "server_rss_mib", targetRate = "target_rate"
        }

        /// A sample.
        package init(
            t: Double, requestsPerSecond: Double, mibPerSecond: Double, connections: Int, errors: UInt64, warmup: Bool
        ) {
            self.t = t
            self.requestsPerSecond = requestsPerSecond
            self.mibPerSecond = mibPerSecond
            self.connections = connections
            self.errors = errors
            self.warmup = warmup
        }
    }

    /// The version of the JSON report's schema (docs/loadtest-report.schema.json): raised only when a key is
    /// removed or changes its meaning or unit; new keys may appear within a version.
    package static let schemaVersion = 1

    /// Always `"loadtest"`.
    package var tool = "loadtest"
    /// ``schemaVersion`` when written; nil in a report read back from a loadtest that wrote none.
    package var schemaVersion: Int? = RunResult.schemaVersion
    /// `echo`, `stream`, `connect`, `idle`, `http`, `udp`, `tcp` or `ws` (the demo reports as `echo`), or the
    /// name of a ``LoadProtocol``.
    package var mode: String
    /// `host:port` (HTTP: with the path); merged results list every target, comma-separated.
    package var target: String
    /// Connections asked for (connect mode: parallel churn slots).
    package var connections: Int
    /// Connections established (connect mode: every successful connect) and connects that failed.
    package var connectionsEstablished: Int
    package var connectionsFailed: Int
    /// Connections still open when the window ended.
    package var connectionsOpen: Int
    /// Echo message size and requests in flight per connection (echo and HTTP runs).
    package var messageSize: Int?
    package var pipeline: Int?
    /// The open-loop rate asked for; nil for closed loop.
    package var targetRate: Double?
    /// Client event loops (threads).
    package var loops: Int
    /// The measured window, seconds.
    package var durationSeconds: Double
    /// Seconds of load before the window.
    package var warmupSeconds: Double
    /// Requests (round trips, HTTP responses, churn cycles) completed in the window.
    package var requests: UInt64
    /// ``requests`` divided by the window.
    package var requestsPerSecond: Double
    /// Bytes received in the window.
    package var bytes: UInt64
    /// ``bytes`` per second, in MiB.
    package var mibPerSecond: Double
    /// Errors of the whole run (opening included), by kind.
    package var errors: Errors
    /// Latency percentiles of the window, in µs.
    package var latencyUs: Latency
    /// The full latency histogram of the window, in ns.
    package var histogram: HistogramData
    /// One sample per second of load (warm-up included).
    package var timeline: [Sample]
    /// How many results were merged into this one (1 for a single run).
    package var sources = 1
    /// With `--server-pid`: the server's CPU seconds (user + system) over the window, and per request.
    var serverCPUSeconds: Double?
    var serverMicrosecondsPerRequest: Double?
    /// The client loops' CPU seconds (user + system) over the window, and per request: the generator's own cost.
    var clientCPUSeconds: Double?
    var clientMicrosecondsPerRequest: Double?
    /// The run's name (`--id`); merged results list every name, comma-separated.
    package var id: String?
    /// The measured window on the wall clock, Unix seconds (merged: the earliest start and the latest end).
    package var windowStart: Double?
    package var windowEnd: Double?
    /// Merged results: how far apart the parts' windows started, seconds.
    package var windowStartSpread: Double?
    /// The `--start-at` time asked for, Unix seconds.
    package var startAt: Double?
    /// Open loop: the service time (from the actual send, not the intended one), percentiles and histogram.
    package var serviceTimeUs: Latency?
    var serviceHistogram: HistogramData?
    /// TLS: handshake time (connect start to the handshake's end) of the connections made in the window,
    /// apart from request latency.
    package var tlsHandshakeUs: Latency?
    var tlsHandshakeHistogram: HistogramData?
    /// UDP mode: what happened to the datagrams of the window.
    package var datagrams: Datagrams?
    /// ws mode: the workload, untimed messages and the server's close codes (RunResult+WebSocket.swift).
    package var webSocket: WebSocket?
    /// With `--server-metrics`: the server's event loops over the window (utilisation and lag).
    package var serverLoops: ServerLoops?
    /// What the reader should know about the figures (a rate not reached, windows that do not line up, …).
    package var warnings: [String]?
    /// `--threshold`: each one's outcome (see Thresholds.swift).
    package var thresholds: [ThresholdOutcome]?
    /// `--stages`: each stage's figures (see StageRecorder.swift).
    package var stages: [StageFigures]?
    /// HTTP with several `--url`s: each one's figures (see URLBreakdown.swift).
    package var urls: [URLFigures]?
    /// With `--server-pid`: the server's memory over the run (see ServerSideStats.swift).
    package var serverProcess: ServerProcess?
    /// With `--series`: intervals' p50 and p99 over the window, for the SVG (not in the JSON: the series file
    /// has every row).
    package var latencyOverTime: [SeriesPoint]?

    /// With `--server-metrics`: the server's loops over the measured window, from its metrics page scraped as
    /// the window began and as it ended.
    package struct ServerLoops: Codable, Sendable, Equatable {
        /// The metrics address scraped, `host:port`.
        package var source: String
        /// All loops together: utilisation is their summed busy time over their summed busy and wait time.
        package var all: ServerLoop
        /// Each loop, in the order of the server's page.
        package var loops: [ServerLoop]
    }

    /// One server loop (or all of them) over the window.
    package struct ServerLoop: Codable, Sendable, Equatable {
        /// The loop's name (`all` for the sum).
        package var loop: String
        /// busy / (busy + wait): 0 idle, 1 never waiting.
        package var utilisation: Double
        /// Seconds working, and waiting in `epoll_wait`.
        package var busySeconds: Double
        package var waitSeconds: Double
        /// Loop iterations, and callbacks that held the loop past the server's stall threshold.
        package var iterations: UInt64
        package var stalls: UInt64
        /// How late the server ran its timers and the tasks other threads handed it.
        package var lag: ServerLag

        enum CodingKeys: String, CodingKey {
            case loop, utilisation, busySeconds = "busy_s", waitSeconds = "wait_s", iterations, stalls, lag
        }
    }

    /// A server loop's lag over the window, from its Prometheus histogram: each percentile is the `le` bound
    /// (10 µs to 10 s) of the bucket that holds it, so the lag was at most that; nil with no samples, or when
    /// the percentile lies above 10 s.
    package struct ServerLag: Codable, Sendable, Equatable {
        /// Lag samples in the window.
        package var count: UInt64
        /// The exact mean (from the histogram's sum), µs.
        package var meanUs: Double?
        package var p50Us: Double?
        package var p90Us: Double?
        package var p99Us: Double?
        package var p99_9Us: Double?

        enum CodingKeys: String, CodingKey {
            case count, meanUs = "mean_us", p50Us = "p50_us", p90Us = "p90_us", p99Us = "p99_us", p99_9Us = "p99_9_us"
        }
    }

    /// UDP mode: datagrams sent in the window, and those lost, reordered, duplicated or corrupt (counted when
    /// found, within the window). Echoed ones are ``requests``.
    package struct Datagrams: Codable, Sendable, Equatable {
        /// Sent (handed to the kernel, or refused by it: a refused one is also a send error).
        package var sent: UInt64 = 0
        /// Not echoed within `--timeout`.
        package var lost: UInt64 = 0
        /// Echoed after a later datagram of the same flow had been.
        package var reordered: UInt64 = 0
        /// An echo of a datagram already echoed or counted lost (a late echo is one too).
        package var duplicates: UInt64 = 0
        /// An echo of the wrong length or with bytes that were not sent (also a `mismatch` error).
        package var corrupt: UInt64 = 0

        /// No datagrams.
        package init() {}

        /// Adds another loop's (or run's) counts.
        package mutating func add(_ other: Datagrams) {
            sent &+= other.sent
            lost &+= other.lost
            reordered &+= other.reordered
            duplicates &+= other.duplicates
            corrupt &+= other.corrupt
        }

        /// Lost datagrams as a share of those sent, percent.
        var lossPercent: Double { sent > 0 ? Double(lost) * 100 / Double(sent) : 0 }
    }

    enum CodingKeys: String, CodingKey {
        case tool, schemaVersion = "schema_version", mode, target, connections
        case connectionsEstablished = "connections_established"
        case connectionsFailed = "connections_failed"
        case connectionsOpen = "connections_open"
        case messageSize = "message_size", pipeline
        case targetRate = "target_rate"
        case loops
        case durationSeconds = "duration_s"
        case warmupSeconds = "warmup_s"
        case requests
        case requestsPerSecond = "requests_per_second"
        case bytes
        case mibPerSecond = "mib_per_second"
        case errors
        case latencyUs = "latency_us"
        case histogram, timeline, sources
        case serverCPUSeconds = "server_cpu_s"
        case serverMicrosecondsPerRequest = "server_us_per_request"
        case clientCPUSeconds = "client_cpu_s"
        case clientMicrosecondsPerRequest = "client_us_per_request"
        case id
        case windowStart = "window_start"
        case windowEnd = "window_end"
        case windowStartSpread = "window_start_spread_s"
        case startAt = "start_at"
        case serviceTimeUs = "service_time_us"
        case serviceHistogram = "service_histogram"
        case tlsHandshakeUs = "tls_handshake_us"
        case tlsHandshakeHistogram = "tls_handshake_histogram"
        case datagrams, warnings, webSocket = "websocket"
        case serverLoops = "server_loops"
        case thresholds, stages, urls, serverProcess = "server_process"
    }

    /// The result's latency histogram.
    package var latencyHistogram: Histogram { histogram.histogram ?? Histogram() }

    // MARK: JSON

    /// Pretty, key-sorted JSON, of this build's schema version (whatever the results merged into it carried).
    package func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        var current = self
        current.schemaVersion = Self.schemaVersion
        return try encoder.encode(current)
    }

    /// Reads a result written by ``jsonData()``.
    package static func decode(_ data: Data) throws -> RunResult {
        try JSONDecoder().decode(RunResult.self, from: data)
    }

    // MARK: Merge

    /// Merges results of runs that ran at the same time against one system (several processes or machines):
    /// counts and rates add up, the histograms merge (so percentiles stay exact to the bucket), the window is
    /// the longest, and the timelines add second by second.
    /// Results run with different settings (message size, pipeline, open or closed loop, HTTP request) are
    /// refused unless `allowMixed`; windows that do not line up are merged with a warning.
    package static func merge(_ results: [RunResult], allowMixed: Bool = false) throws(ArgumentError) -> RunResult {
        guard var merged = results.first else { throw ArgumentError("nothing to merge") }
        let differences = settingDifferences(results)
        if !differences.isEmpty && !allowMixed {
            throw ArgumentError("the results were run with different settings "
                + "(\(differences.joined(separator: "; "))): their sum would describe no run; merge them anyway "
                    + "with --mixed")
        }
        var histogram = merged.latencyHistogram
        var service = merged.serviceHistogram?.histogram
        var handshake = merged.tlsHandshakeHistogram?.histogram
        var errors = ErrorCounts(byName: merged.errors.byKind)
        for other in results.dropFirst() {
            guard other.mode == merged.mode else {
                throw ArgumentError("cannot merge a \(other.mode) result into \(merged.mode) results")
            }
            guard let h = other.histogram.histogram else { throw ArgumentError("a result's histogram is unreadable") }
            histogram.merge(h)
            errors.merge(ErrorCounts(byName: other.errors.byKind))
            if merged.target != other.target && !merged.target.split(separator: ",").contains(Substring(other.target)) {
                merged.target += "," + other.target
            }
            merged.connections += other.connections
            merged.connectionsEstablished += other.connectionsEstablished
            merged.connectionsFailed += other.connectionsFailed
            merged.connectionsOpen += other.connectionsOpen
            if let rate = other.targetRate { merged.targetRate = (merged.targetRate ?? 0) + rate }
            merged.loops += other.loops
            merged.durationSeconds = max(merged.durationSeconds, other.durationSeconds)
            merged.warmupSeconds = max(merged.warmupSeconds, other.warmupSeconds)
            merged.requests += other.requests
            merged.requestsPerSecond += other.requestsPerSecond
            merged.bytes += other.bytes
            merged.mibPerSecond += other.mibPerSecond
            if merged.errors.first == nil { merged.errors.first = other.errors.first }
            for (i, sample) in other.timeline.enumerated() {
                if i < merged.timeline.count {
                    merged.timeline[i].requestsPerSecond += sample.requestsPerSecond
                    merged.timeline[i].mibPerSecond += sample.mibPerSecond
                    merged.timeline[i].connections += sample.connections
                    merged.timeline[i].errors += sample.errors
                } else {
                    merged.timeline.append(sample)
                }
            }
            if let h = other.serviceHistogram?.histogram {
                if service == nil { service = h } else { service!.merge(h) }
            }
            if let h = other.tlsHandshakeHistogram?.histogram {
                if handshake == nil { handshake = h } else { handshake!.merge(h) }
            }
            if let id = other.id { merged.id = merged.id.map { $0 + "," + id } ?? id }
            if let d = other.datagrams {
                if merged.datagrams == nil { merged.datagrams = d } else { merged.datagrams!.add(d) }
            }
            if let w = other.webSocket {
                if merged.webSocket == nil { merged.webSocket = w } else { merged.webSocket!.add(w) }
            }
            if merged.messageSize != other.messageSize { merged.messageSize = nil }
            if merged.pipeline != other.pipeline { merged.pipeline = nil }
            merged.sources += other.sources
            merged.serverCPUSeconds = nil
            merged.serverMicrosecondsPerRequest = nil
            merged.clientCPUSeconds = nil
            merged.clientMicrosecondsPerRequest = nil
        }
        let first = merged.errors.first
        merged.errors = Errors(errors, first: first)
        merged.histogram = HistogramData(histogram)
        merged.latencyUs = Latency(histogram)
        if let service {
            merged.serviceHistogram = HistogramData(service)
            merged.serviceTimeUs = Latency(service)
        }
        if let handshake {
            merged.tlsHandshakeHistogram = HistogramData(handshake)
            merged.tlsHandshakeUs = Latency(handshake)
        }
        // Processes that ran together against one server scraped the same loops over the same seconds: their
        // figures are one server's, not to be added up. Different servers have no one figure.
        let sources = Set(results.map { $0.serverLoops?.source ?? "" })
        if sources.count != 1 || sources.first == "" { merged.serverLoops = nil }
        mergeWindows(results, into: &merged)
        merged.stages = mergeStages(results)
        merged.urls = mergeURLs(results)
        merged.serverProcess = nil
        merged.thresholds = nil  // checked again on the merged figures
        return merged
    }
}
