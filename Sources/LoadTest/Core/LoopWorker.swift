import Dispatch
import EpollLoop
import FoundationEssentials
import LoopSocket
import Synchronization

/// What the coordinator hears from the loops between its snapshots: connections settling (established or
/// failed) while they are being opened. Any thread.
final class RunSignals: Sendable {
    private let settledCount = Atomic<Int>(0)
    private let establishedCount = Atomic<Int>(0)
    private let securedCount = Atomic<Int>(0)
    private let tlsFailureCount = Atomic<Int>(0)
    /// Signalled every time a connection settles, so the coordinator wakes without polling.
    let changed = DispatchSemaphore(value: 0)

    /// Connections established or failed so far.
    var settled: Int { settledCount.load(ordering: .acquiring) }
    /// Connections established so far (TCP).
    var established: Int { establishedCount.load(ordering: .acquiring) }
    /// TLS handshakes completed so far, and TLS failures (a handshake that failed, mostly).
    var secured: Int { securedCount.load(ordering: .acquiring) }
    var tlsFailures: Int { tlsFailureCount.load(ordering: .acquiring) }

    func settle(ok: Bool) {
        if ok { establishedCount.add(1, ordering: .relaxed) }
        settledCount.add(1, ordering: .releasing)
        changed.signal()
    }

    /// Whether the coordinator waits for the connections to open: only then do handshakes signal it (it
    /// sleeps on ``changed`` during the load too, and a wakeup per handshake would cost connect mode dearly).
    let opening = Atomic<Bool>(true)

    /// A TLS handshake completed (`ok`) or a TLS error ended a connection.
    func handshakeEnded(ok: Bool) {
        guard opening.load(ordering: .relaxed) else { return }
        if ok { securedCount.add(1, ordering: .releasing) } else { tlsFailureCount.add(1, ordering: .releasing) }
        changed.signal()
    }
}

/// The counters one loop reports each second.
struct WorkerSnapshot: Sendable {
    var completed: UInt64 = 0
    var receivedBytes: UInt64 = 0
    var errors: UInt64 = 0
    var open = 0
    var established = 0
    var failed = 0
    /// TLS handshakes completed.
    var secured = 0

    mutating func add(_ other: WorkerSnapshot) {
        secured += other.secured
        completed &+= other.completed
        receivedBytes &+= other.receivedBytes
        errors &+= other.errors
        open += other.open
        established += other.established
        failed += other.failed
    }
}

/// Everything one loop measured, handed over when the run ends.
struct WorkerFinal: Sendable {
    var snapshot = WorkerSnapshot()
    var histogram = Histogram()
    var serviceHistogram = Histogram()
    /// TLS: time from starting the connect to the handshake's end (``LoopWorker/recordHandshake(_:)``).
    var handshakeHistogram = Histogram()
    var errors = ErrorCounts()
    var firstError: String?
    var windowCompleted: UInt64 = 0
    var windowBytes: UInt64 = 0
    /// The counters only the mode keeps (``ModeLoop/finish()``).
    var modeFigures: (any ModeFigures)?

    mutating func add(_ other: WorkerFinal) {
        if let theirs = other.modeFigures { modeFigures = modeFigures?.adding(theirs) ?? theirs }
        snapshot.add(other.snapshot)
        histogram.merge(other.histogram)
        serviceHistogram.merge(other.serviceHistogram)
        handshakeHistogram.merge(other.handshakeHistogram)
        errors.merge(other.errors)
        if firstError == nil { firstError = other.firstError }
        windowCompleted &+= other.windowCompleted
        windowBytes &+= other.windowBytes
    }
}

/// A connection (or churn slot) a worker drives.
protocol LoadConnection: AnyObject {
    /// Starts connecting.
    func start()
    /// Disconnects without counting anything (the run is over).
    func stop()
}

/// A connection whose replies the worker times out itself, by a sweep a few times a second, instead of arming a
/// socket read timer for every request (which costs more than the rest of the request's bookkeeping).
protocol SweptConnection: LoadConnection {
    /// Disconnects with a timeout error if the oldest request in flight was sent before `cutoff` (ns).
    func expireRequests(sentBefore cutoff: UInt64)
    /// The run is over: counts each reply still awaited whose request was sent before `cutoff` (ns) as
    /// ``ErrorKind/unfinished``.
    func countUnfinished(sentBefore cutoff: UInt64)
}

extension SweptConnection {
    /// Counts nothing (a connection that does not tell its unfinished replies apart).
    func countUnfinished(sentBefore cutoff: UInt64) {}
}

/// A connection that sends requests when an open-loop schedule says so.
protocol PacedConnection: LoadConnection {
    /// Whether it is connected and has room for another request in flight.
    var hasRoom: Bool { get }
    /// Sends one request, meant to go out at `intended` (ns).
    func sendPaced(intended: UInt64)
}

/// The state of one client event loop: its connections, its counters and latency histogram, the measuring
/// window, and the open-loop schedule. Confined to `loop` (created elsewhere, then touched only there), so
/// nothing on the hot path takes a lock; the coordinator reads it through `loop.execute`.
final class LoopWorker: @unchecked Sendable {
    let loop: EventLoop
    let config: LoadConfig
    /// Connections (or churn slots) this loop runs.
    let target: Int
    /// The global number of this loop's first connection (numbers give each connection its own pattern).
    let firstNumber: Int
    let signals: RunSignals
    /// The reply timeout handed to socket reads, in seconds; -1 for none (swept connections time out by sweep).
    let replyTimeout: Double
    /// The reply timeout the sweep enforces, ns; 0 for none.
    let sweepTimeout: UInt64
    let connectTimeout: Double
    let maxConnecting: Int
    /// The server's address, resolved once for the run (echo modes; the others resolve per connection).
    let address: ServerAddress?
    /// Where echo connections receive: replies are checked as soon as they arrive and never kept, so one
    /// buffer serves every connection of the loop (as in the C reference load generator), and stays in cache.
    let receiveBuffer: UnsafeMutableRawBufferPointer

    // Counters since the start (for progress) and within the window (for the report). The hot ones opt out of
    // dynamic exclusivity checks: they are touched only on the loop, by code that never holds an access across
    // a call, and each check costs more than the increment it guards.
    @exclusivity(unchecked) var completed: UInt64 = 0
    @exclusivity(unchecked) var receivedBytes: UInt64 = 0
    @exclusivity(unchecked) var windowCompleted: UInt64 = 0
    @exclusivity(unchecked) var windowBytes: UInt64 = 0
    /// Latency of the replies in the window (open loop: from the intended send time).
    @exclusivity(unchecked) private var latencies = HistogramRecorder()
    /// Open loop: latency from the actual send (service time), beside ``latencies``' from the intended time.
    @exclusivity(unchecked) private var serviceTimes = HistogramRecorder()
    /// TLS handshakes completed in the window: connect start to socketDidSecure.
    @exclusivity(unchecked) private var handshakeTimes = HistogramRecorder()
    /// The latencies recorded so far (a copy).
    var histogram: Histogram { latencies.histogram }
    /// The service times recorded so far (a copy).
    var serviceHistogram: Histogram { serviceTimes.histogram }
    /// The handshake times recorded so far (a copy).
    var handshakeHistogram: Histogram { handshakeTimes.histogram }
    @exclusivity(unchecked) var errors = ErrorCounts()
    var firstError: String?
    @exclusivity(unchecked) var open = 0
    var established = 0
    var failed = 0
    var secured = 0

    /// The measuring window, ns; `.max` until the load starts.
    @exclusivity(unchecked) var windowStart = UInt64.max
    @exclusivity(unchecked) var windowEnd = UInt64.max
    /// Set once the run is over: callbacks stop sending and count nothing more.
    @exclusivity(unchecked) var stopping = false

    private(set) var connections: [any LoadConnection] = []
    /// The mode's share of this loop: it makes the connections and keeps the mode's own counters.
    private var modeLoop: (any ModeLoop)?
    private var opened = 0
    private var connecting = 0
    private var filling = false
    private var rampPacer: RatePacer?
    private var churnSerial: UInt64 = 0

    // Open loop (touched on every pass, hence unchecked like the counters above).
    @exclusivity(unchecked) private var pacer: RatePacer?
    /// `--stages`: the schedule that ramps and holds (``pacer`` is then nil).
    @exclusivity(unchecked) private var stagePacer: StagePacer?
    @exclusivity(unchecked) private var pacerTimer: PacerTimer?
    @exclusivity(unchecked) private var paced: [any PacedConnection] = []
    private var swept: [any SweptConnection] = []
    @exclusivity(unchecked) private var paceCursor = 0
    @exclusivity(unchecked) private var pacing = false
    /// When the next paced request is due (`.max` with no schedule): connections compare it cheaply.
    @exclusivity(unchecked) var nextPaceAt = UInt64.max
    /// The time `pace` sends at: a paced connection records it as the request's actual send time.
    @exclusivity(unchecked) var paceNow: UInt64 = 0
    /// The client TLS configuration (`--tls`); nil for plaintext.
    let tls: TLSConfiguration?

    /// The size of ``receiveBuffer``: big enough that coalesced replies of many pipelined requests come in
    /// one `recv`.
    static let receiveBufferSize = 64 * 1024

    /// One `recv` on `fd` into ``receiveBuffer``, for the connections that talk to the kernel themselves: the
    /// bytes that came (none when the peer has closed), or nil when nothing is waiting. Valid until the next
    /// read on this loop.
    @inline(__always)
    func receive(on fd: Int32) throws(SyscallError) -> UnsafeRawBufferPointer? {
        guard case .processed(let count) = try Syscall.recv(fd, receiveBuffer) else { return nil }
        return UnsafeRawBufferPointer(start: receiveBuffer.baseAddress, count: count)
    }

    init(loop: EventLoop, config: LoadConfig, target: Int, firstNumber: Int, signals: RunSignals,
         address: ServerAddress? = nil) {
        self.loop = loop
        self.address = address
        receiveBuffer = .allocate(byteCount: Self.receiveBufferSize, alignment: 16)
        self.config = config
        self.target = target
        self.firstNumber = firstNumber
        self.signals = signals
        let swept = config.mode.isSwept(config)
        replyTimeout = config.timeout > 0 && !swept ? config.timeout : -1
        sweepTimeout = config.timeout > 0 && swept ? UInt64(config.timeout * 1e9) : 0
        connectTimeout = config.timeout > 0 ? config.timeout : 30
        maxConnecting = max(1, config.maxConnecting / max(1, config.loops))
        tls = config.tls.configuration
        modeLoop = config.mode.makeLoop(self)
    }

    deinit {
        receiveBuffer.deallocate()
    }

    // MARK: Recording (hot path)

    /// A reply arrived at `now` (`latency` ns after its request was, or was meant to be, sent).
    @inline(__always)
    func recordReply(latency: UInt64, bytes: Int, now: UInt64) {
        completed &+= 1
        receivedBytes &+= UInt64(bytes)
        if now >= windowStart && now < windowEnd {
            windowCompleted &+= 1
            windowBytes &+= UInt64(bytes)
            latencies.record(latency)
        }
    }

    /// An open-loop reply arrived at `now`: `latency` ns after it was meant to be sent, `service` ns after it was.
    @inline(__always)
    func recordPacedReply(latency: UInt64, service: UInt64, bytes: Int, now: UInt64) {
        recordReply(latency: latency, bytes: bytes, now: now)
        if now >= windowStart && now < windowEnd { serviceTimes.record(service) }
    }

    /// Bytes arrived (stream mode: throughput without per-request latency).
    @inline(__always)
    func recordBytes(_ bytes: Int, now: UInt64) {
        receivedBytes &+= UInt64(bytes)
        if now >= windowStart && now < windowEnd { windowBytes &+= UInt64(bytes) }
    }

    /// Whether `time` (ns) falls in the measuring window.
    @inline(__always)
    func inWindow(_ time: UInt64) -> Bool { time >= windowStart && time < windowEnd }

    /// Counts an error unless the run is over.
    func recordError(_ kind: ErrorKind, _ message: @autoclosure () -> String) {
        guard !stopping else { return }
        errors.add(kind)
        if firstError == nil { firstError = message() }
        if kind == .tls { signals.handshakeEnded(ok: false) }
    }

    // MARK: Opening connections

    /// Starts opening this loop's connections: paced over `--ramp`, or as fast as `maxConnecting` allows.
    func beginOpening() {
        guard target > 0 else { return }
        if !config.mode.holdsConnections {
            // Churn slots open and close all the time: every one starts at once.
            for _ in 0..<target { openOne() }
            return
        }
        if config.ramp > 0 {
            rampPacer = RatePacer(ratePerSecond: Double(target) / config.ramp, start: Deadline.now().uptimeNanoseconds)
            rampTick()
        } else {
            fill()
        }
    }

    private func rampTick() {
        guard !stopping, var ramp = rampPacer else { return }
        let now = Deadline.now().uptimeNanoseconds
        while opened < target, ramp.next(now: now) != nil { openOne() }
        rampPacer = ramp
        if opened < target {
            _ = loop.scheduleOnLoop(at: ramp.nextIntendedTime) { [self] in rampTick() }
        }
    }

    private func fill() {
        guard !filling else { return }
        filling = true
        while !stopping && opened < target && connecting < maxConnecting { openOne() }
        filling = false
    }

    private func openOne() {
        let number = firstNumber + opened
        opened += 1
        connecting += 1
        let connection = modeLoop!.makeConnection(number: number)
        connections.append(connection)
        if let paced = connection as? any PacedConnection { self.paced.append(paced) }
        if sweepTimeout > 0, let timed = connection as? any SweptConnection {
            if swept.isEmpty { scheduleSweep() }
            swept.append(timed)
        }
        connection.start()
    }

    /// Times out requests older than the reply timeout, every quarter of it (at most every second).
    private func scheduleSweep() {
        let period = min(sweepTimeout / 4, 1_000_000_000)
        _ = loop.scheduleOnLoop(at: Deadline.now().uptimeNanoseconds + max(period, 10_000_000)) { [self] in
            guard !stopping else { return }
            let now = Deadline.now().uptimeNanoseconds
            if now > sweepTimeout {
                for connection in swept { connection.expireRequests(sentBefore: now - sweepTimeout) }
            }
            scheduleSweep()
        }
    }

    /// A `GCDAsyncSocket` on this loop, connecting to the target with `delegate`; nil if the connect could
    /// not even start, in which case the failure is counted (and, when `settling`, the connection settled).
    /// With TLS the handshake is queued at once: the connection's reads and writes go over it, and its
    /// `socketDidSecure` reports the handshake's time (``recordHandshake(_:)``).
    func connectSocket(_ delegate: any GCDAsyncSocketDelegate, settling: Bool = true) -> GCDAsyncSocket? {
        let socket = GCDAsyncSocket(delegate: delegate, delegateQueue: nil, loop: loop)
        do {
            try socket.connect(toHost: config.host, onPort: config.port, withTimeout: connectTimeout)
            if let tls {
                socket.userData = HandshakeStart(nanoseconds: Deadline.now().uptimeNanoseconds)
                socket.startTLS(tls)
            }
            return socket
        } catch {
            recordError(ErrorKind.classify(error), "connect: \(error)")
            if settling { connectionSettled(ok: false) }
            return nil
        }
    }

    /// A GCDAsyncSocket connection ended in `previous` state: a connect that failed, or an open connection
    /// gone; its error, if any, counted.
    func connectionEnded(from previous: LoadConnectionState, error: (any Error)?) {
        if previous == .connecting {
            connectionSettled(ok: false)
        } else if previous == .open {
            connectionClosed()
        }
        if let error { recordError(ErrorKind.classify(error), "\(error)") }
    }

    /// A TLS handshake completed (the connection's `socketDidSecure`).
    func recordHandshake(_ socket: GCDAsyncSocket) {
        secured += 1
        signals.handshakeEnded(ok: true)
        guard let start = socket.userData as? HandshakeStart else { return }
        let now = Deadline.now().uptimeNanoseconds
        if now >= windowStart && now < windowEnd { handshakeTimes.record(now &- start.nanoseconds) }
    }

    /// A connection is up (`ok`) or could not be opened.
    func connectionSettled(ok: Bool) {
        connecting -= 1
        if ok {
            established += 1
            open += 1
        } else {
            failed += 1
        }
        signals.settle(ok: ok)
        if rampPacer == nil { fill() }
    }

    /// An established connection closed.
    func connectionClosed() {
        open -= 1
    }

    /// The next churn connection's serial number (gives each its own pattern phase).
    func nextChurnSerial() -> UInt64 {
        churnSerial &+= 1
        return UInt64(firstNumber) &* 1_000_003 &+ churnSerial
    }

    // MARK: Load and window

    /// The load starts (open loop: the schedule begins at `loadStart`) and the window is set.
    func startLoad(loadStart: UInt64, windowStart: UInt64, windowEnd: UInt64) {
        self.windowStart = windowStart
        self.windowEnd = windowEnd
        guard let rate = config.rate, target > 0 else { return }
        let share = Double(target) / Double(max(1, config.connections))
        if let stages = config.stages {
            stagePacer = StagePacer(stages: stages, share: share, start: loadStart)
        } else {
            pacer = RatePacer(ratePerSecond: rate * share, start: loadStart)
        }
        nextPaceAt = loadStart
        // The worker outlives its timer (``finish()`` closes it), so each wakeup skips the unowned check.
        pacerTimer = PacerTimer(loop: loop) { [unowned(unsafe) self] now in
            pace(now: now)
        }
        pace(now: Deadline.now().uptimeNanoseconds)
    }

    /// Sends every request due at `now`, each on the next connection with room; arms the timer for the
    /// next one. With no room anywhere the backlog waits for a reply (and its latency keeps growing).
    func pace(now: UInt64) {
        // A connection that fails while it sends may call back in here: the loop below carries on instead.
        guard !stopping, !pacing else { return }
        guard var schedule = pacer else { return paceStages(now: now) }
        pace(&schedule, now: now)
        pacer = schedule
    }

    /// ``pace(now:)`` with `--stages`: out of line, so the constant rate's code stays as compact as it was.
    @inline(never)
    private func paceStages(now: UInt64) {
        guard var schedule = stagePacer else { return }
        pace(&schedule, now: now)
        stagePacer = schedule
    }

    /// ``pace(now:)`` with `schedule`: specialized for each kind, so the constant rate's stays a plain value.
    @inline(__always)
    private func pace<Schedule: ArrivalSchedule>(_ schedule: inout Schedule, now: UInt64) {
        pacing = true
        defer { pacing = false }
        paceNow = now
        let (next, blocked) = schedule.handOutDue(now: now) { intended in
            guard let connection = nextWithRoom() else { return false }
            connection.sendPaced(intended: intended)
            return true
        }
        nextPaceAt = next
        // With no room anywhere the replies pace the backlog (a reply frees room); the timer is left alone.
        guard !blocked, let timer = pacerTimer else { return }
        timer.arm(at: PacerWakeup.deadline(next: next, now: now, armed: timer.armedAt, slack: config.pacingSlack))
    }

    private func nextWithRoom() -> (any PacedConnection)? {
        let count = paced.count
        guard count > 0 else { return nil }
        for _ in 0..<count {
            let candidate = paced[paceCursor]
            paceCursor += 1
            if paceCursor == count { paceCursor = 0 }
            if candidate.hasRoom { return candidate }
        }
        return nil
    }

    // MARK: Reporting

    var snapshot: WorkerSnapshot {
        WorkerSnapshot(completed: completed, receivedBytes: receivedBytes, errors: errors.total,
                       open: open, established: established, failed: failed, secured: secured)
    }

    /// Ends the run on this loop: stops sending, closes every connection, and hands over the figures.
    func finish() -> WorkerFinal {
        // Replies still awaited after the whole measured duration are errors: in a run shorter than --timeout,
        // a server that stalls would otherwise pass for one that was never asked.
        let now = Deadline.now().uptimeNanoseconds
        let waited = UInt64(config.duration * 1e9)
        if now > waited {
            for case let connection as any SweptConnection in connections {
                connection.countUnfinished(sentBefore: now - waited)
            }
        }
        let result = WorkerFinal(snapshot: snapshot, histogram: histogram, serviceHistogram: serviceHistogram,
                                 handshakeHistogram: handshakeHistogram, errors: errors, firstError: firstError,
                                 windowCompleted: windowCompleted, windowBytes: windowBytes,
                                 modeFigures: modeLoop?.finish())
        stopping = true
        pacerTimer?.close()
        pacerTimer = nil
        pacer = nil
        stagePacer = nil
        nextPaceAt = .max
        for connection in connections { connection.stop() }
        return result
    }

    /// Drops the connections (after the loops have stopped).
    func release() {
        connections = []
        modeLoop = nil
        paced = []
        swept = []
    }
}

/// When a TLS connection started connecting, kept in its socket's `userData` until `socketDidSecure`.
final class HandshakeStart {
    let nanoseconds: UInt64
    init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
}
