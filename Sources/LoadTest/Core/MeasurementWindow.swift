/// A run's measuring window, and where the load is in relation to it: the load warms up until the window
/// opens (at once when there is no warm-up), and the window closes at its planned end or, cut short, at an
/// interrupt. At each edge it takes the readings whose differences the result reports: the CPU time of the
/// client's loops and of the server (`--server-pid`), a scrape of the server's loop metrics
/// (`--server-metrics`), and the `--series` start.
///
/// ```
/// warmingUp --(tick reaches start)--> measuring --(end reached, or interrupt)--> closed
/// warmingUp --(interrupt before the window opens)--> closed
/// ```
struct MeasurementWindow {
    /// Where the load is.
    enum State: Equatable {
        /// The load runs; nothing it does counts yet.
        case warmingUp
        /// The window is open: what the load does counts.
        case measuring
        /// The window has closed, at its planned end or cut by an interrupt (perhaps before it opened).
        case closed
    }

    /// How the window takes its readings (one round trip to every loop for the client's).
    struct Readings {
        /// The CPU time of the loops' threads so far, seconds.
        var clientCPU: () -> Double
        /// The server's CPU time so far, seconds (`--server-pid`); nil when not watched or unreadable.
        var serverCPU: () -> Double?
        /// The server's loop metrics, scraped at each edge (`--server-metrics`).
        var serverLoops: ServerLoopWindow?
        /// Starts the `--series` rows at the window's start.
        var beginSeries: (UInt64) -> Void
    }

    /// When the load started (monotonic ns).
    let loadStart: UInt64
    /// When the window opens (the warm-up's end).
    let start: UInt64
    /// When the window closes: its planned end, earlier once an interrupt cuts it.
    private(set) var end: UInt64
    private(set) var state = State.warmingUp
    private let readings: Readings
    private var clientCPU: (start: Double?, end: Double?) = (nil, nil)
    private var serverCPU: (start: Double?, end: Double?) = (nil, nil)
    /// Scrapes of the server's loop metrics begun: the window's start, then its end.
    private var serverScrapes = 0

    /// The window of a load started at `loadStart`: `warmup` seconds, then `duration` seconds measured.
    init(loadStart: UInt64, warmup: Double, duration: Double, readings: Readings) {
        self.loadStart = loadStart
        start = loadStart + LoadRunner.nanos(warmup)
        end = start + LoadRunner.nanos(duration)
        self.readings = readings
    }

    /// Opens the window at the load's start when there is no warm-up (once the loops have started the load).
    mutating func openUnlessWarmingUp() {
        if state == .warmingUp && start == loadStart { open() }
    }

    /// The window's length, seconds (0 when cut before it opened).
    var seconds: Double { Double(end - min(start, end)) / 1e9 }

    /// The CPU time the client's loops spent in the window, seconds; nil when it never opened.
    var clientCPUSeconds: Double? { clientCPU.start.flatMap { start in clientCPU.end.map { $0 - start } } }

    /// The CPU time the server spent in the window, seconds; nil when not watched or the window never opened.
    var serverCPUSeconds: Double? { serverCPU.start.flatMap { start in serverCPU.end.map { $0 - start } } }

    /// The client's CPU time when the window closed (for the last `--series` row), 0 before it closes.
    var clientCPUAtEnd: Double { clientCPU.end ?? 0 }

    /// The server's loop figures over the window: nil unless `--server-metrics` was scraped at both edges.
    func serverLoopFigures() -> Result<RunResult.ServerLoops, LoadTestError>? {
        serverScrapes == 2 ? readings.serverLoops?.finish() : nil
    }

    /// An interrupt at `now` cuts the window there (not before its start); returns the new end, nil when the
    /// window was ending by then anyway.
    mutating func cut(at now: UInt64) -> UInt64? {
        guard now < end else { return nil }
        end = max(start, now)
        return end
    }

    /// The load has reached `tick` (a planned instant; it is `now`): the window opens when the tick is its
    /// start, and closes once `now` is past its end or the run is `interrupted`.
    mutating func advance(to tick: UInt64, now: UInt64, interrupted: Bool) {
        if state == .warmingUp && tick == start { open() }
        if state != .closed && (now >= end || interrupted) { close() }
    }

    private mutating func open() {
        state = .measuring
        clientCPU.start = readings.clientCPU()
        readings.beginSeries(start)
        serverCPU.start = readings.serverCPU()
        if let serverLoops = readings.serverLoops {
            serverLoops.begin(0)
            serverScrapes = 1
        }
    }

    private mutating func close() {
        clientCPU.end = readings.clientCPU()
        serverCPU.end = readings.serverCPU()
        if let serverLoops = readings.serverLoops, state == .measuring {
            serverLoops.begin(1)
            serverScrapes = 2
        }
        state = .closed
    }
}
