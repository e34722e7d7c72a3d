import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc
import LoopSocket
import Synchronization

/// A run that could not start or could not finish cleanly.
struct LoadTestError: Error, CustomStringConvertible, Sendable {
    /// What happened and what to do about it.
    package let message: String
    /// An error saying `message`.
    package init(_ message: String) { self.message = message }
    /// The message.
    package var description: String { message }
}

/// Runs one load test: opens the connections on its own event loop group, starts the load, reports progress
/// once a second, and returns the figures of the measuring window. Leaves nothing running.
///
/// ```swift
/// var config = LoadConfig(mode: .echo)
/// config.port = 9000
/// let result = try LoadRunner(config: config).run()
/// print(ReportText.report(result))
/// ```
///
/// The coordinator (the calling thread) never touches connection state: it talks to each loop's
/// ``LoopWorker`` through `execute`, once a second, so the loops count without locks.
package final class LoadRunner: Sendable {
    /// The configuration (for the demo, with the in-process server's port filled in by ``run()``).
    package let config: LoadConfig
    private let output: @Sendable (String) -> Void
    private let signals = RunSignals()
    private let interrupted = Atomic<Bool>(false)

    /// Called with each second's sample as it is taken (on the coordinating thread).
    private let progress: (@Sendable (RunResult.Sample) -> Void)?
    /// The loops to run on, owned by the caller (shared with a server, say); nil: the run's own group.
    private let sharedGroup: EventLoopGroup?

    /// A runner for `config`, printing progress and notices through `output` (default: standard output), handing
    /// each second's sample to `progress`, on the loops of `group` (left running) or of a group of its own.
    package init(config: LoadConfig, output: @escaping @Sendable (String) -> Void = LoadRunner.printLine,
                 progress: (@Sendable (RunResult.Sample) -> Void)? = nil, group: EventLoopGroup? = nil) {
        self.config = config
        self.output = output
        self.progress = progress
        self.sharedGroup = group
    }

    /// Writes a line to standard output and flushes it.
    package static let printLine: @Sendable (String) -> Void = { line in
        var text = line + "\n"
        text.withUTF8 { bytes in
            var done = 0
            while done < bytes.count {
                let n = Glibc.write(1, bytes.baseAddress! + done, bytes.count - done)
                if n <= 0 { break }
                done += n
            }
        }
    }

    /// Ends the run early (from a signal handler's queue, say): the window closes now and the report covers it.
    package func interrupt() {
        interrupted.store(true, ordering: .releasing)
        signals.changed.signal()
    }

    /// Runs the test. Throws ``LoadTestError`` when it cannot start (fd limit, unknown host, no server for the demo).
    package func run() throws -> RunResult {
        var config = self.config
        let mode = config.mode
        var server: EchoServer?
        if mode.startsServer {
            do {
                server = try EchoServer(host: "127.0.0.1", port: 0, loops: 1)
            } catch {
                throw LoadTestError("cannot start the in-process echo server: \(error)")
            }
            config.host = "127.0.0.1"
            config.port = server!.port
        }
        defer { try? server?.stop() }
        if !config.quiet {
            let server = mode.startsServer ? "the in-process echo server at " : ""
            let units = ReportText.count(config.connections, mode.unit)
            output("loadtest \(mode.resultName): \(units) to \(server)\(config.host):\(config.port) on "
                   + "\(config.loops) loop(s), \(ReportText.fixed(config.effectiveWarmup, 1)) s warm-up + "
                   + "\(ReportText.fixed(config.duration, 1)) s")
        }
        try checkLimits(config, inProcessServer: server != nil)
        // A wrong --server-metrics address is found now, not after the run.
        if let address = config.serverMetrics {
            _ = try ServerLoopMetrics.scrape(address, timeout: Self.scrapeTimeout)
        }

        // Connections that talk to the kernel themselves connect to one address, looked up here, off the loops
        // (getaddrinfo blocks).
        var address: ServerAddress?
        if mode.resolvesAddress {
            address = try ServerAddress.resolve(host: config.host, port: config.port)
        }

        let group: EventLoopGroup
        do {
            group = try sharedGroup ?? EventLoopGroup(numberOfLoops: config.loops, name: "loadtest")
        } catch {
            throw LoadTestError("cannot start \(config.loops) event loop(s): \(error)")
        }
        config.loops = group.loops.count
        var workers: [LoopWorker] = []
        var first = 0
        for (i, loop) in group.loops.enumerated() {
            let share = config.connections / config.loops + (i < config.connections % config.loops ? 1 : 0)
            workers.append(LoopWorker(loop: loop, config: config, target: share, firstNumber: first,
                                      signals: signals, address: address))
            first += share
        }
        defer {
            if sharedGroup == nil {
                try? group.shutdownGracefully(timeout: .seconds(10))
                for worker in workers { worker.release() }
            } else {
                _ = gather(workers) { $0.release() }  // on their loops, which go on running
            }
        }
        let extras = try RunExtras(config: config, loop: group.loops[0], output: output)
        defer { extras.close() }
        let series = try config.series.path.map { _ in try SeriesWriter(options: config.series) }
        return try drive(config, workers, extras, series)
    }

    // MARK: Phases

    /// The run, phase by phase: opening the connections, starting the load together, measuring (a warm-up,
    /// then the window, which ``MeasurementWindow`` owns), and the result.
    private func drive(_ config: LoadConfig, _ workers: [LoopWorker], _ extras: RunExtras,
                       _ series: SeriesWriter?) throws -> RunResult {
        let t0 = Deadline.now().uptimeNanoseconds
        let serverSide = config.serverPID.map { ServerProcessSampler(pid: $0) }  // before the connections
        _ = gather(workers) { $0.beginOpening() }
        try openConnections(config, workers, since: t0)
        var (window, opened) = startLoad(config, workers, series, openingBegan: t0)
        let stageRecorder = config.stages.map { StageRecorder(stages: $0, loadStart: window.loadStart, start: opened) }
        _ = serverSide?.sample(now: window.loadStart, windowBegins: window.start)
        window.openUnlessWarmingUp()
        let timeline = try measure(config, workers, extras, series, &window, stageRecorder, serverSide)
        return finish(config, workers, extras, series, window, timeline, stageRecorder, serverSide)
    }

    /// Opening: waits until every connection is up or has failed (churn slots need no wait), then fails fast
    /// when none could be made, waits for `--start-at`, and throws if interrupted meanwhile.
    private func openConnections(_ config: LoadConfig, _ workers: [LoopWorker], since t0: UInt64) throws {
        let mode = config.mode
        if mode.holdsConnections {
            let limit = t0 + Self.nanos(config.ramp + (config.timeout > 0 ? config.timeout : 30) + 1)
            var nextReport = t0 + 1_000_000_000
            // With TLS a connection is ready once its handshake is over, not at its TCP connect.
            let tls = config.tls.enabled
            func handshaking() -> Bool { tls && signals.secured + signals.tlsFailures < signals.established }
            while (signals.settled < config.connections || handshaking()) && !isInterrupted {
                let now = Deadline.now().uptimeNanoseconds
                if now >= limit { break }
                if now >= nextReport {
                    if !config.quiet {
                        let s = sum(gather(workers) { $0.snapshot })
                        output("  opening: \(s.established) established, \(s.failed) failed of \(config.connections)")
                    }
                    nextReport = Self.nextSecond(after: nextReport, past: now)
                }
                _ = signals.changed.wait(timeout: .now() + .nanoseconds(Int(min(limit, nextReport) - now)))
            }
        }

        signals.opening.store(false, ordering: .relaxed)
        if mode.holdsConnections { try checkAnyConnected(config, workers) }
        if let startAt = config.startAt { try waitForStart(startAt, config, workers) }
        if isInterrupted {
            // Nothing was measured: no figures (a window of 0 s has none worth printing) and no success.
            _ = gather(workers) { $0.finish() }
            let when = config.startAt != nil ? "while waiting for the start time (--start-at)"
                : "while opening the connections"
            throw LoadTestError("interrupted \(when), before the load began: nothing was measured")
        }
    }

    /// Starts the load on every loop at once, with the window it will be measured in; returns the window and
    /// the connections' figures at the start.
    private func startLoad(_ config: LoadConfig, _ workers: [LoopWorker], _ series: SeriesWriter?,
                           openingBegan t0: UInt64) -> (MeasurementWindow, WorkerSnapshot) {
        let loadStart = Deadline.now().uptimeNanoseconds
        let pid = config.serverPID
        let readings = MeasurementWindow.Readings(
            clientCPU: { self.clientCPU(workers) },
            serverCPU: { pid.flatMap { Limits.cpuSeconds(pid: $0) } },
            serverLoops: config.serverMetrics.map { ServerLoopWindow(address: $0, timeout: Self.scrapeTimeout) },
            beginSeries: { start in series?.begin(at: start, totals: self.seriesTotals(workers)) })
        let planned = MeasurementWindow(loadStart: loadStart, warmup: config.effectiveWarmup,
                                        duration: config.duration, readings: readings)
        let (windowStart, windowEnd) = (planned.start, planned.end)
        let opened = sum(gather(workers) { worker in
            worker.startLoad(loadStart: loadStart, windowStart: windowStart, windowEnd: windowEnd)
            return worker.snapshot
        })
        if !config.quiet && config.mode.holdsConnections {
            let took = ReportText.fixed(Double(loadStart - t0) / 1e9, 2)
            let failed = opened.failed > 0 ? " (\(opened.failed) failed)" : ""
            output("  \(opened.established) of \(config.connections) connections open in \(took) s\(failed)")
        }
        return (planned, opened)
    }

    /// The load: a sample and a progress line per second (plus a tick where the warm-up ends, so no sample
    /// straddles it, and at each stage's end) until the window closes; returns the samples.
    private func measure(
        _ config: LoadConfig, _ workers: [LoopWorker], _ extras: RunExtras, _ series: SeriesWriter?,
        _ window: inout MeasurementWindow, _ stageRecorder: StageRecorder?, _ serverSide: ServerProcessSampler?
    ) throws -> [RunResult.Sample] {
        var timeline: [RunResult.Sample] = []
        var previous = sum(gather(workers) { $0.snapshot })
        var previousTime = window.loadStart
        var tick = window.loadStart
        while window.state != .closed {
            let next = tick + 1_000_000_000
            let planned = tick < window.start && next > window.start ? window.start : min(next, window.end)
            tick = stageRecorder?.nextTick(after: tick, planned: planned) ?? planned  // and at each stage's end
            sleep(until: tick, writing: series, workers, windowEnd: window.end)
            let now = Deadline.now().uptimeNanoseconds
            // Read once: an interrupt arriving later in this pass is acted on in the next, never half (a window
            // left uncut while the loop stops would report the planned length for what was measured).
            let interruptedNow = isInterrupted
            if interruptedNow, let cut = window.cut(at: now) {
                _ = gather(workers) { $0.windowEnd = cut }
            }
            window.advance(to: tick, now: now, interrupted: interruptedNow)
            let current = sum(gather(workers) { $0.snapshot })
            let seconds = Double(now - previousTime) / 1e9
            let bytes = Double(current.receivedBytes &- previous.receivedBytes)
            var sample = RunResult.Sample(
                t: Double(now - window.loadStart) / 1e9,
                requestsPerSecond: seconds > 0 ? Double(current.completed &- previous.completed) / seconds : 0,
                mibPerSecond: seconds > 0 ? bytes / seconds / 1_048_576 : 0,
                connections: current.open,
                errors: current.errors,
                warmup: tick <= window.start && window.start > window.loadStart)
            sample.serverRSSMiB = serverSide?.sample(now: now, windowBegins: window.start)
            sample.targetRate = config.targetRate(from: Double(previousTime - window.loadStart) / 1e9,
                                                  to: Double(now - window.loadStart) / 1e9)
            timeline.append(sample)
            progress?(sample)
            if let stageRecorder, stageRecorder.stageEnded(by: min(now, window.end)) {
                stageRecorder.take(at: min(now, window.end), totals: current, histogram: mergedHistogram(workers))
            }
            if !config.mode.holdsConnections && timeline.count == 1 {
                try checkAnyConnected(config, workers, afterFirstSecond: true)
            }
            try checkAnyAlive(config, workers, current)
            if extras.isActive {
                let histogram = tick > window.start ? mergedHistogram(workers) : nil
                extras.tick(windowStart: window.start, end: min(now, window.end), histogram: histogram,
                            totals: current, errors: errorCounts(workers), targetRate: sample.targetRate)
            }
            if !config.quiet { output(progressLine(config, sample)) }
            previous = current
            previousTime = now
        }
        return timeline
    }

    /// The result: the loops' final figures over the closed `window`, with everything measured beside them.
    private func finish(
        _ config: LoadConfig, _ workers: [LoopWorker], _ extras: RunExtras, _ series: SeriesWriter?,
        _ window: MeasurementWindow, _ timeline: [RunResult.Sample], _ stageRecorder: StageRecorder?,
        _ serverSide: ServerProcessSampler?
    ) -> RunResult {
        var final = WorkerFinal()
        for part in gather(workers, { $0.finish() }) { final.add(part) }
        let seconds = window.seconds
        var result = makeResult(config, final, window: seconds, warmup: config.effectiveWarmup, timeline: timeline)
        result.windowStart = Self.wallClock(at: min(window.start, window.end))
        result.windowEnd = Self.wallClock(at: window.end)
        result.startAt = config.startAt
        result.id = config.runID
        final.modeFigures?.report(into: &result, config: config, window: seconds)
        if let stageRecorder {
            stageRecorder.take(at: window.end, totals: final.snapshot, histogram: final.histogram, cut: true)
            result.stages = stageRecorder.figures
        }
        result.serverProcess = serverSide?.figures
        if final.serviceHistogram.count > 0 {
            result.serviceTimeUs = RunResult.Latency(final.serviceHistogram)
            result.serviceHistogram = RunResult.HistogramData(final.serviceHistogram)
        }
        if final.handshakeHistogram.count > 0 {
            result.tlsHandshakeUs = RunResult.Latency(final.handshakeHistogram)
            result.tlsHandshakeHistogram = RunResult.HistogramData(final.handshakeHistogram)
        }
        if let warning = RunResult.rateWarning(target: config.rate, achieved: result.requestsPerSecond),
           !isInterrupted {
            result.warnings = [warning]
        }
        if let series {
            let totals = SeriesTotals(completed: final.windowCompleted, histogram: final.histogram,
                                      errors: final.errors, cpuSeconds: window.clientCPUAtEnd)
            if let warning = series.finish(totals, at: window.end) {
                result.warnings = (result.warnings ?? []) + [warning]
            }
            result.latencyOverTime = series.points
        }
        if let cpu = window.clientCPUSeconds {
            result.clientCPUSeconds = cpu
            if result.requests > 0 { result.clientMicrosecondsPerRequest = cpu * 1e6 / Double(result.requests) }
        }
        if let cpu = window.serverCPUSeconds {
            result.serverCPUSeconds = cpu
            if result.requests > 0 { result.serverMicrosecondsPerRequest = cpu * 1e6 / Double(result.requests) }
        }
        switch window.serverLoopFigures() {
        case .success(let figures): result.serverLoops = figures
        case .failure(let error): result.warnings = (result.warnings ?? []) + ["\(error)"]
        case nil: break
        }
        do {
            try extras.finish()
        } catch {
            result.warnings = (result.warnings ?? []) + ["\(error)"]
        }
        result.checkThresholds(config.thresholds)
        return result
    }

    private func makeResult(_ config: LoadConfig, _ final: WorkerFinal, window: Double, warmup: Double,
                            timeline: [RunResult.Sample]) -> RunResult {
        let s = final.snapshot
        let mode = config.mode
        return RunResult(
            mode: mode.resultName,
            target: mode.target(config),
            connections: config.connections,
            connectionsEstablished: s.established,
            connectionsFailed: s.failed,
            connectionsOpen: s.open,
            messageSize: mode.isEchoLike ? config.size : nil,
            pipeline: mode.pipelines ? config.pipeline : nil,
            targetRate: config.rate,
            loops: config.loops,
            durationSeconds: window,
            warmupSeconds: warmup,
            requests: final.windowCompleted,
            requestsPerSecond: window > 0 ? Double(final.windowCompleted) / window : 0,
            bytes: final.windowBytes,
            mibPerSecond: window > 0 ? Double(final.windowBytes) / window / 1_048_576 : 0,
            errors: RunResult.Errors(final.errors, first: final.firstError),
            latencyUs: RunResult.Latency(final.histogram),
            histogram: RunResult.HistogramData(final.histogram),
            timeline: timeline)
    }

    private func progressLine(_ config: LoadConfig, _ s: RunResult.Sample) -> String {
        let t = "[\(ReportText.fixed(s.t, 1).leftPadded(5))s]"
        let phase = s.warmup ? " warm-up" : ""
        let target = s.targetRate.map { " (target \(ReportText.fixed($0, 0)))" } ?? ""
        return "  \(t)\(phase) " + config.mode.progress(ProgressFigures(sample: s, target: target))
    }

    // MARK: Failing fast and starting together

    /// Throws when not one connection could be made (after the opening phase, or in connect mode after the
    /// first second): a run that can only count errors names their cause at once instead of at the end.
    /// With TLS, a connection counts once its handshake is over: a certificate the client does not trust
    /// fails every handshake, and no amount of waiting changes that.
    private func checkAnyConnected(_ config: LoadConfig, _ workers: [LoopWorker],
                                   afterFirstSecond: Bool = false) throws {
        let s = sum(gather(workers) { $0.snapshot })
        let usable = config.tls.enabled ? s.secured : s.established
        guard usable == 0, s.failed > 0 || s.errors > 0, !isInterrupted else { return }
        let when = afterFirstSecond ? "in the first second" : "of \(ReportText.count(config.connections, "connection"))"
        let made = config.tls.enabled ? "secured" : "made"
        try stopEarly(config, workers, "no connection to \(config.host):\(config.port) could be \(made) \(when)")
    }

    /// Throws when, during the load, every connection has gone without a single reply (echo, stream and http
    /// connections are not replaced, so the run could only count seconds of nothing): a server that speaks
    /// another protocol, or closes every connection it accepts. Replies that time out are left to the report:
    /// a server that stalls is what a load test is there to measure; so are idle connections a server closes.
    private func checkAnyAlive(_ config: LoadConfig, _ workers: [LoopWorker], _ s: WorkerSnapshot) throws {
        guard config.mode.expectsReplies, s.open == 0, s.completed == 0, s.receivedBytes == 0, s.errors > 0,
              !isInterrupted else { return }
        let counts = errorCounts(workers)
        guard counts.total > counts[.timeout] else { return }
        try stopEarly(config, workers, "every connection to \(config.host):\(config.port) ended before a single reply")
    }

    /// Ends the run on every loop and throws `what`, with the errors by kind, the first one, and a hint.
    private func stopEarly(_ config: LoadConfig, _ workers: [LoopWorker], _ what: String) throws -> Never {
        let counts = errorCounts(workers)
        let first = gather(workers) { $0.firstError }.compactMap { $0 }.first
        _ = gather(workers) { $0.finish() }
        let kinds = counts.byName.sorted { $0.key < $1.key }
            .map { "\($0.key) \(ReportText.grouped($0.value))" }.joined(separator: ", ")
        throw LoadTestError("\(what) (\(kinds))\(first.map { ": \($0)" } ?? ""); \(Self.hint(counts, config))")
    }

    /// What to check, from the kinds of error that stopped the run.
    static func hint(_ counts: ErrorCounts, _ config: LoadConfig) -> String {
        if counts[.tls] > 0 {
            return "if the server's certificate is signed by a CA of your own, trust it with --tls-ca FILE; for a "
                + "throwaway certificate, --insecure skips verification; and check that the server speaks TLS on "
                + "port \(config.port)"
        }
        if counts[.connectTimeout] > 0 && counts[.refused] == 0 {
            return "can this machine reach \(config.host) (a firewall that drops connects looks like this)?"
        }
        if counts[.refused] > 0 {
            return "is the server running there?"
        }
        let layer = config.tls.enabled ? "TLS" : "plaintext"
        return "is the server running there, and does it speak \(layer) \(config.mode.speaks) on port \(config.port)?"
    }

    /// Waits, connections open, until the wall clock reaches `startAt`; throws if it has already passed.
    private func waitForStart(_ startAt: Double, _ config: LoadConfig, _ workers: [LoopWorker]) throws {
        let wait = startAt - Self.wallClock()
        guard wait >= 0 else {
            _ = gather(workers) { $0.finish() }
            throw LoadTestError("--start-at was \(ReportText.fixed(-wait, 1)) s ago when the connections were open, "
                                + "so this run cannot measure the shared window: give the processes a start time "
                                + "further ahead")
        }
        if !config.quiet { output("  waiting \(ReportText.fixed(wait, 1)) s for the start time (--start-at)") }
        sleep(until: Deadline.now().uptimeNanoseconds + Self.nanos(wait))
    }

    /// The wall clock, Unix seconds.
    static func wallClock() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// The wall-clock time (Unix seconds) of a monotonic instant `uptime` (ns).
    static func wallClock(at uptime: UInt64) -> Double {
        let nowUptime = Deadline.now().uptimeNanoseconds
        let wall = wallClock()
        return wall - (Double(nowUptime) - Double(uptime)) / 1e9
    }

    /// The CPU time of the loops' threads so far, seconds.
    private func clientCPU(_ workers: [LoopWorker]) -> Double {
        gather(workers) { _ in Limits.threadCPUSeconds() }.reduce(0, +)
    }

    /// The loops' counters for a `--series` row, summed (one round trip to each loop).
    private func seriesTotals(_ workers: [LoopWorker]) -> SeriesTotals {
        var totals = SeriesTotals()
        for part in gather(workers, {
            SeriesTotals(completed: $0.windowCompleted, histogram: $0.histogram, errors: $0.errors,
                         cpuSeconds: Limits.threadCPUSeconds())
        }) {
            totals.add(part)
        }
        return totals
    }

    /// The loops' window histograms merged.
    private func mergedHistogram(_ workers: [LoopWorker]) -> Histogram {
        var histogram = Histogram()
        for h in gather(workers, { $0.histogram }) { histogram.merge(h) }
        return histogram
    }

    private func errorCounts(_ workers: [LoopWorker]) -> ErrorCounts {
        var counts = ErrorCounts()
        for c in gather(workers, { $0.errors }) { counts.merge(c) }
        return counts
    }

    // MARK: Limits

    private func checkLimits(_ config: LoadConfig, inProcessServer: Bool) throws {
        // Each client connection is one descriptor (churn: one per slot, plus one closing); the in-process
        // server needs one more per connection.
        let perConnection = inProcessServer ? 2 : 1
        let needed = config.connections * perConnection + Limits.reserve + config.loops * 4
        let limit = Limits.checkFileLimit(needed: needed)
        if !config.quiet {
            let room = limit.connectionsThatFit(perConnection: perConnection,
                                                reserve: Limits.reserve + config.loops * 4)
            let raised = limit.raised ? " (raised to the hard limit)" : ""
            output("  open-file limit \(limit.soft)\(raised): room for \(room) connections")
        }
        guard limit.fits else {
            throw LoadTestError(Limits.advice(limit, connections: config.connections, perConnection: perConnection))
        }
        if let ports = Limits.ephemeralPortRange(), config.mode.holdsConnections, config.connections > ports.count {
            output("  warning: \(config.connections) connections to one address need more local ports than the "
                   + "\(ports.count) in net.ipv4.ip_local_port_range (\(ports.lowerBound)-\(ports.upperBound)): "
                   + "expect addr_not_available errors; widen the range with "
                   + "`sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"`")
        }
    }

    // MARK: Talking to the loops

    private var isInterrupted: Bool { interrupted.load(ordering: .acquiring) }

    /// The first of `tick` + 1 s, `tick` + 2 s, ... (monotonic ns) that is later than `now`. A thread descheduled for
    /// longer than a second (a loaded machine) must skip the seconds it missed: one step could leave the next
    /// tick behind `now`, and the unsigned wait until it would overflow.
    static func nextSecond(after tick: UInt64, past now: UInt64) -> UInt64 {
        guard now >= tick else { return tick + 1_000_000_000 }
        return tick + ((now - tick) / 1_000_000_000 + 1) * 1_000_000_000
    }

    /// ``sleep(until:)``, writing the `--series` rows due by `deadline` on the way; the row that reaches the
    /// window's end is left to the final figures.
    private func sleep(until deadline: UInt64, writing series: SeriesWriter?, _ workers: [LoopWorker],
                       windowEnd: UInt64) {
        while let series, series.due <= deadline, series.due < windowEnd, !isInterrupted {
            sleep(until: series.due)
            let now = Deadline.now().uptimeNanoseconds
            guard !isInterrupted, now < windowEnd else { break }
            series.add(seriesTotals(workers), at: now)
        }
        sleep(until: deadline)
    }

    /// Sleeps until `deadline` (monotonic ns) or an interrupt.
    private func sleep(until deadline: UInt64) {
        while !isInterrupted {
            let now = Deadline.now().uptimeNanoseconds
            if now >= deadline { return }
            _ = signals.changed.wait(timeout: .now() + .nanoseconds(Int(deadline - now)))
        }
    }

    /// Runs `body` on every worker's loop and returns the results in order (bounded wait: a loop that does not
    /// answer within 10 s contributes nothing).
    private func gather<T: Sendable>(_ workers: [LoopWorker], _ body: @escaping @Sendable (LoopWorker) -> T) -> [T] {
        let results = Mutex<[T?]>(Array(repeating: nil, count: workers.count))
        let done = DispatchGroup()
        for (i, worker) in workers.enumerated() {
            done.enter()
            do {
                try worker.loop.execute {
                    let value = body(worker)
                    results.withLock { $0[i] = value }
                    done.leave()
                }
            } catch {
                done.leave()
            }
        }
        _ = done.wait(timeout: .now() + .seconds(10))
        return results.withLock { $0.compactMap { $0 } }
    }

    private func sum(_ snapshots: [WorkerSnapshot]) -> WorkerSnapshot {
        var total = WorkerSnapshot()
        for s in snapshots { total.add(s) }
        return total
    }

    /// How long one scrape of `--server-metrics` may take.
    static let scrapeTimeout = 5.0

    static func nanos(_ seconds: Double) -> UInt64 {
        UInt64(max(0, min(seconds, 1e9)) * 1e9)
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
