import EpollLoop

/// What kind of load to generate: one value per mode, described whole in the mode's own file
/// (`LoadMode+Echo.swift`, `LoadMode+HTTP.swift`, …): its name, how it is reported, whether it is echo-like,
/// swept, open-loop capable and warms up, its progress line, its connection factory and counters, its own
/// options and what it refuses on the command line. ``LoadRunner`` and ``LoopWorker`` ask the value; they never
/// compare modes.
///
/// A new mode is one file: a `static let` built with ``init(name:summary:makeLoop:)``, its traits set, and an
/// entry in ``all``.
///
/// ```swift
/// var config = LoadConfig(mode: .echo)
/// config.port = 9000
/// let result = try LoadRunner(config: config).run()
/// ```
package struct LoadMode: Sendable {
    /// The name on the command line (`loadtest echo`).
    package let name: String
    /// The name its results carry (the demo reports as `echo`).
    package internal(set) var resultName: String
    /// Its lines under "Modes" in `--help` (the first starts with the name, padded to 10 columns).
    package internal(set) var summary: String
    /// One loop's share of the mode: its connection factory and the counters only this mode keeps.
    let makeLoop: @Sendable (LoopWorker) -> any ModeLoop

    /// What one of `--connections` is called (`connection`, `churn slot`, `flow`).
    package internal(set) var unit = "connection"
    /// `--connections` unless given.
    package internal(set) var defaultConnections = 100
    /// No name on the command line chooses it: it starts an echo server in-process (and leaves it a core).
    package internal(set) var startsServer = false
    /// Fixed-size messages checked byte for byte: the report gives `--size` and `--pipeline`.
    package internal(set) var isEchoLike = false
    /// Its load is chunks of `--size` bytes that are not checked one by one as messages (stream).
    package internal(set) var sendsSizedChunks = false
    /// `--size` sets what it sends: its messages (echo-like modes) or its chunks (stream).
    var takesSize: Bool { isEchoLike || sendsSizedChunks }
    /// The schemes its `--url` takes: plaintext and TLS (`http`/`https`; `ws`/`wss` for WebSocket).
    package internal(set) var urlSchemes = (plain: "http", secure: "https")
    /// Requests in flight per connection (`--pipeline`) mean something here, and the report gives it.
    package internal(set) var pipelines = false
    /// `--rate` and `--stages` run it open loop.
    package internal(set) var supportsOpenLoop = true
    /// Its load warms up before the window opens (idle connections have nothing to warm up).
    package internal(set) var warmsUp = true
    /// The opening phase waits for every connection (churn slots open all the time instead).
    package internal(set) var holdsConnections = true
    /// A run in which every connection ended before a single reply stops early (not for modes that send
    /// nothing, replace their connections, or lose datagrams as a matter of course).
    package internal(set) var expectsReplies = true
    /// Its connections go to one address looked up once for the run (those that talk to the kernel
    /// themselves), not through a lookup per connection.
    package internal(set) var resolvesAddress = false
    /// `--tls` applies.
    package internal(set) var supportsTLS = true
    /// What its throughput counts: requests (the default), connections (churn) or bytes (a stream).
    package internal(set) var throughputUnit = ThroughputUnit.requests
    /// A run may measure no latency at all (a closed-loop stream): the chart then has no latency panel.
    package internal(set) var latencyIsOptional = false
    /// Its chart shows the connections held over time instead of latency and throughput (idle).
    package internal(set) var chartsConnectionsOnly = false
    /// Its results' target names a path after the address (`127.0.0.1:8080/api`), so a run of one URL is that
    /// URL's run (a `url:` threshold judges it whole; merged parts aimed at other paths differ in a setting).
    package internal(set) var targetHasPath = false
    /// The protocol the server must speak, for the hint when nothing connects (`echo`, `HTTP/1.1`).
    package internal(set) var speaks = "echo"
    /// What the results say the run was aimed at (`127.0.0.1:9000`; http adds the path).
    package internal(set) var target: @Sendable (LoadConfig) -> String = { "\($0.host):\($0.port)" }
    /// Replies are timed out by the worker's sweep (``SweptConnection``), not by a timer per read.
    package internal(set) var isSwept: @Sendable (LoadConfig) -> Bool = { _ in true }
    /// It measures latency (a latency threshold means something): not idle, not a closed-loop stream.
    package internal(set) var measuresLatency: @Sendable (LoadConfig) -> Bool = { _ in true }
    /// The progress line after the time and phase (`12,345 req/s, 100 connections, 0 errors`).
    package internal(set) var progress: @Sendable (ProgressFigures) -> String = { p in
        "\(ReportText.fixed(p.sample.requestsPerSecond, 0)) req/s\(p.target), \(p.sample.connections) connections, "
            + "\(p.sample.errors) errors"
    }
    /// What the report's first line says the load was (`echo 64 B, pipeline 1`), from its result.
    package internal(set) var reportTitle: @Sendable (RunResult) -> String = { r in
        let size = r.messageSize.map { "\($0) B" } ?? "mixed sizes"
        let pipeline = r.pipeline.map { "pipeline \($0)" } ?? "mixed pipelines"
        return "echo \(size), \(pipeline)"
    }
    /// The report's throughput line(s).
    package internal(set) var reportThroughput: @Sendable (RunResult) -> [String] = { r in
        ["  requests/s: \(ReportText.fixed(r.requestsPerSecond, 0)) (\(ReportText.grouped(r.requests)) requests, "
            + "\(ReportText.fixed(r.mibPerSecond, 2)) MiB/s received)"]
    }
    /// A command line that runs it, after `loadtest NAME`, shown under "Example:" in its `--help` (a test runs
    /// each through the parser).
    package internal(set) var example: [String] = []
    /// The option sets it takes beyond the common ones (parsed whatever the mode; refused when given to a mode
    /// that does not list them).
    package internal(set) var options: [ModeOptions] = []
    /// The checks of a command line choosing it, after every flag is parsed (`given`: the flags, long names).
    package internal(set) var validate: @Sendable (inout LoadConfig, Set<String>) throws(ArgumentError) -> Void = {
        config, given throws(ArgumentError) in try LoadMode.requirePort(config, given)
    }

    /// A mode called `name`, described in `--help` by `summary`, whose loops run what `makeLoop` makes; every
    /// trait at its default (a request/response mode over TCP, swept, open-loop capable).
    init(name: String, summary: String, makeLoop: @escaping @Sendable (LoopWorker) -> any ModeLoop) {
        self.name = name
        self.resultName = name
        self.summary = summary
        self.makeLoop = makeLoop
    }

    /// The modes a command line can name, in `--help`'s order.
    package static let all: [LoadMode] = [.echo, .stream, .connect, .idle, .http, .udp, .tcp, .ws]

    /// The mode called `name` (the demo too), nil if there is none.
    package init?(rawValue name: String) {
        guard let mode = ([.demo] + Self.all).first(where: { $0.name == name }) else { return nil }
        self = mode
    }

    /// The name (as `LoadMode(rawValue:)` takes it).
    package var rawValue: String { name }

    /// The mode whose results are called `resultName` (for reports read back from JSON), nil if none is.
    static func reporting(_ resultName: String) -> LoadMode? {
        all.first { $0.resultName == resultName }
    }

    /// The mode whose results are called `resultName`, or, for one no built-in mode reports (a
    /// ``LoadProtocol``'s), a request/response mode of that name: what reports, charts, thresholds, merges and
    /// comparisons ask about a result read back, instead of comparing its mode's name.
    static func traits(ofResults resultName: String) -> LoadMode {
        reporting(resultName) ?? .requestResponse(name: resultName, summary: "") { _ in TCPProtocol(TCPSettings()) }
    }

    /// The loops a run uses unless `--loops` says: one per core, less the in-process server's.
    var defaultLoops: Int {
        let cores = EventLoopGroup.coreCount
        return startsServer ? max(1, cores - 1) : cores
    }

    /// Whether `flag` is one of the options of its own it takes.
    func takes(_ flag: String) -> Bool { options.contains { $0.flags.contains(flag) } }

    /// Refuses a command line without `--port`.
    static func requirePort(_ config: LoadConfig, _ given: Set<String>) throws(ArgumentError) {
        guard given.contains("--port") else {
            throw ArgumentError("\(config.mode.name) mode needs --port (and --host, default 127.0.0.1)")
        }
    }
}

extension LoadMode: Equatable, Hashable, CustomStringConvertible {
    /// Modes are equal when their names are.
    package static func == (a: LoadMode, b: LoadMode) -> Bool { a.name == b.name }
    /// Hashes the name.
    package func hash(into hasher: inout Hasher) { hasher.combine(name) }
    /// The name.
    package var description: String { name }
}

/// What a mode's throughput counts, and so the unit its reports, charts and comparisons give it in.
package enum ThroughputUnit: Sendable {
    /// Requests (or messages, datagrams) per second.
    case requests
    /// Connections opened and closed per second.
    case connections
    /// MiB per second.
    case mebibytes
}

/// What a progress line is made from: the second's sample and the open-loop target (` (target 50,000)` or
/// empty).
package struct ProgressFigures: Sendable {
    /// The second just ended.
    package var sample: RunResult.Sample
    /// ` (target R)` in open loop, empty in closed loop.
    package var target: String
}

/// Command-line options that only some modes take: parsed whatever the mode, refused (naming the modes that
/// take them) unless the mode chosen lists them in its ``LoadMode/options``. Several modes may share a set.
package struct ModeOptions: Sendable {
    /// Their long names; the first names the set.
    package var flags: [String]
    /// Their lines in `--help`.
    package var usage: String
    /// Handles `flag` if it is one of them (its value through `value`); false otherwise.
    package var parse: @Sendable (String, inout LoadConfig, () throws(ArgumentError) -> String) throws(ArgumentError)
        -> Bool

    /// The options `flags`, described by `usage`, parsed by `parse`.
    package init(
        flags: [String], usage: String,
        parse: @escaping @Sendable (String, inout LoadConfig, () throws(ArgumentError) -> String) throws(ArgumentError)
            -> Bool
    ) {
        self.flags = flags
        self.usage = usage
        self.parse = parse
    }

    /// Every set some mode takes, once each, in the order of ``LoadMode/all``.
    static var all: [ModeOptions] {
        var seen: Set<String> = []
        return LoadMode.all.flatMap(\.options).filter { seen.insert($0.flags[0]).inserted }
    }

    /// The modes that take this set.
    var modes: [LoadMode] { LoadMode.all.filter { $0.options.contains { $0.flags == flags } } }
}

/// One loop's share of a mode: makes the loop's connections and keeps the counters only this mode has
/// (UDP's datagram fates, HTTP's per-URL figures). Confined to the loop, like its ``LoopWorker``.
protocol ModeLoop: AnyObject {
    /// The loop's connection number `number` (numbers are global: each gives its connection its own pattern).
    func makeConnection(number: Int) -> any LoadConnection
    /// The mode's counters on this loop, handed over when the run ends; nil when it keeps none.
    func finish() -> (any ModeFigures)?
}

extension ModeLoop {
    /// No counters of its own.
    func finish() -> (any ModeFigures)? { nil }
}

/// A mode's own counters from one loop, merged over the loops and put into the result.
protocol ModeFigures: Sendable {
    /// These and `other`'s (from another loop of the same run, so of the same type).
    func adding(_ other: any ModeFigures) -> any ModeFigures
    /// Puts them into `result` (of a run of `config` whose window lasted `window` seconds).
    func report(into result: inout RunResult, config: LoadConfig, window: Double)
}

/// Figures that add up field by field (`add`), which is all ``ModeFigures/adding(_:)`` then has to do.
protocol SummableModeFigures: ModeFigures {
    mutating func add(_ other: Self)
}

extension SummableModeFigures {
    func adding(_ other: any ModeFigures) -> any ModeFigures {
        var sum = self
        if let other = other as? Self { sum.add(other) }
        return sum
    }
}

/// A mode loop that only makes connections (with `make`).
final class ConnectionFactory: ModeLoop {
    private unowned let worker: LoopWorker
    private let make: (LoopWorker, Int) -> any LoadConnection

    init(_ worker: LoopWorker, _ make: @escaping (LoopWorker, Int) -> any LoadConnection) {
        self.worker = worker
        self.make = make
    }

    func makeConnection(number: Int) -> any LoadConnection { make(worker, number) }
}
