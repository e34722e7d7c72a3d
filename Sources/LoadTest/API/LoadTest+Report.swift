import FoundationEssentials

extension LoadTest {
    /// The figures of one run's measuring window: what `loadtest` prints, and the JSON it writes with `--json`.
    ///
    /// ```swift
    /// let report = try await LoadTest.run(configuration)
    /// XCTAssertEqual(report.errors.total, 0, report.text)
    /// XCTAssertLessThan(report.latency.p99, 50_000)        // µs
    /// try report.json().write(to: URL(fileURLWithPath: "run.json"))   // as `loadtest --json run.json` writes
    /// ```
    public struct Report: Sendable, Equatable {
        /// The engine's result, which the JSON is written from.
        let result: RunResult
        /// Whether the calling task was cancelled during the load, so the window was cut short
        /// (``duration`` says how long it lasted). Not part of the JSON.
        public let wasCancelled: Bool

        init(_ result: RunResult, wasCancelled: Bool = false) {
            self.result = result
            self.wasCancelled = wasCancelled
        }

        /// A report read back from a `loadtest --json` file (or ``json()``), of any schema version 1 run.
        public init(json: Data) throws(ReportDecodingError) {
            do {
                result = try RunResult.decode(json)
            } catch {
                let why = RunResult.describeDecodingError(error)
                throw ReportDecodingError(message: "not a loadtest JSON result (\(why))")
            }
            wasCancelled = false
        }

        /// The report as `loadtest --json FILE` writes it, byte for byte: pretty, key-sorted JSON whose keys
        /// docs/loadtest-report.schema.json describes.
        public func json() throws -> Data { try result.jsonData() }

        /// The report as `loadtest` prints it at the end of a run.
        public var text: String { ReportText.report(result) }

        /// The mode the run was of (`echo`, `http`, a ``LoadProtocol``'s name).
        public var mode: String { result.mode }
        /// What it was aimed at (`127.0.0.1:9000`; http adds the path).
        public var target: String { result.target }
        /// Connections asked for.
        public var connections: Int { result.connections }
        /// Connections made, and those that failed to connect.
        public var connectionsEstablished: Int { result.connectionsEstablished }
        /// Connections that could not be made.
        public var connectionsFailed: Int { result.connectionsFailed }
        /// Open loop: the requests per second asked for; nil for closed loop.
        public var targetRate: Double? { result.targetRate }
        /// Seconds measured (shorter than asked when cancelled).
        public var duration: Double { result.durationSeconds }
        /// Seconds of warm-up before the window.
        public var warmup: Double { result.warmupSeconds }
        /// Requests completed in the window (stream mode: chunks; connect mode: connections).
        public var requests: UInt64 { result.requests }
        /// ``requests`` per second of the window.
        public var requestsPerSecond: Double { result.requestsPerSecond }
        /// Bytes received in the window.
        public var bytes: UInt64 { result.bytes }
        /// MiB received per second of the window.
        public var mibPerSecond: Double { result.mibPerSecond }
        /// Latency in the window, µs: from the intended send time in open loop.
        public var latency: Latency { Latency(result.latencyUs) }
        /// Open loop: service time, µs, from the actual send; nil in closed loop.
        public var serviceTime: Latency? { result.serviceTimeUs.map(Latency.init) }
        /// The window's full latency histogram.
        public var histogram: LatencyHistogram { LatencyHistogram(result.latencyHistogram) }
        /// Errors counted in the window, by kind.
        public var errors: Errors { Errors(result.errors) }
        /// CPU seconds (user + system) the client's loops used over the window; nil when not measured.
        public var clientCPUSeconds: Double? { result.clientCPUSeconds }
        /// The client's CPU µs per request: what generating the load cost.
        public var clientMicrosecondsPerRequest: Double? { result.clientMicrosecondsPerRequest }
        /// One figure per second of the load, the warm-up's included.
        public var timeline: [Sample] { result.timeline.map(Sample.init) }
        /// Each ``Configuration/thresholds`` criterion, in order, and whether it held.
        public var thresholds: [ThresholdOutcome] { (result.thresholds ?? []).map(ThresholdOutcome.init) }
        /// Whether every threshold held (true when there were none).
        public var thresholdsMet: Bool { result.thresholds?.allSatisfy(\.passed) ?? true }
        /// What the reader should know about the figures (an open-loop rate not reached, say).
        public var warnings: [String] { result.warnings ?? [] }
    }

    /// Bytes that are not a `loadtest` JSON report.
    public struct ReportDecodingError: Error, Equatable, CustomStringConvertible, Sendable {
        /// What is wrong with them.
        public let message: String

        /// The message.
        public var description: String { message }
    }
}
