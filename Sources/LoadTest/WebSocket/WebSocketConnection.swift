import EpollLoop
import Glibc

/// One `ws` mode connection: the opening handshake over TCP (or TLS: `wss://`), then one of the workloads of
/// ``WebSocketSettings/Workload``, with the protocol itself in a ``WebSocketSession`` and the bytes carried by
/// a ``WebSocketTransport`` (``WebSocketLoopTransport`` for `ws://`, ``SocketByteTransport`` for `wss://`):
/// everything here serves both.
///
/// - Echo: binary messages of `--size` bytes carrying the echo pattern (``Pattern``), each echoed message
///   checked byte for byte and timed; `--pipeline` in flight, or paced by the worker's open-loop schedule.
/// - Heartbeat: a ping every `--ws-ping` interval (the first at a point of the interval spread over the
///   connections), carrying its sequence number; a pong's latency counts from the ping's scheduled time.
/// - Receive: every message counted, and timed when it starts with its send time.
///
/// A protocol error from the server fails the connection (its close frame sent with the status code the
/// error calls for) and is counted by its ``WebSocketError/kind``. The server's close with 1000 or 1001 when
/// nothing is outstanding ends the connection without an error, and a new one takes its place (as http mode
/// does after `Connection: close`); with requests outstanding it counts as `closed`, and any other status code
/// as `ws_close`. At the end of the run each connection sends its close (1000) and goes.
final class WebSocketConnection: PacedConnection, SweptConnection, ByteTransportOwner {
    // The worker outlives its connections (it holds them), hence unowned(unsafe); the hot path goes through
    // `workerRef`, as EchoConnection's does, since even an unowned(unsafe) reference is retained around a call.
    unowned(unsafe) let worker: LoopWorker
    private let workerRef: Unmanaged<LoopWorker>
    unowned(unsafe) let shared: WebSocketLoop
    private let settings: WebSocketSettings
    /// The request path (several `--url`s: the connections take them in turn).
    private let path: String
    /// ``Pattern/shared``, copied here so the hot path does not go through its lazy initialiser every time.
    private let pattern = Pattern.shared
    // The mutable state is loop-confined and never accessed across a call that could re-enter it, so it opts
    // out of dynamic exclusivity checks (as EchoConnection's does): each costs more than what it guards.
    /// For good: a reconnect goes through the same transport. (A constant, so calls into it retain nothing.)
    private let transport: any WebSocketTransport
    /// The protocol: a fresh one for every connect.
    @exclusivity(unchecked) private var session: WebSocketSession
    /// The masking keys of the echo messages (the session has its own for the frames it writes).
    @exclusivity(unchecked) private var maskKeys = WebSocketMaskKeys()
    @exclusivity(unchecked) private var state = LoadConnectionState.idle
    private let phase: UInt32
    private let size: Int
    private let openLoop: Bool
    /// The (intended) send time of each message or ping in flight, by sequence number.
    @exclusivity(unchecked) private var times: SendTimes
    /// Open loop: when each message actually went out, for service time.
    @exclusivity(unchecked) private var sentTimes: SendTimes
    @exclusivity(unchecked) private var nextSend: UInt64 = 0
    @exclusivity(unchecked) private var nextReceive: UInt64 = 0
    /// Heartbeat: the next ping's scheduled time and its timer.
    @exclusivity(unchecked) private var nextPing: UInt64 = 0
    @exclusivity(unchecked) private var pingTimer = TimerID.invalid
    /// The opening handshake's deadline (`--timeout`, at most 30 s, from the TCP connect).
    @exclusivity(unchecked) private var handshakeTimer = TimerID.invalid
    /// The server closed normally with nothing outstanding: the slot opens a new connection.
    @exclusivity(unchecked) private var reconnecting = false
    /// Frames queued and not yet written: what one read calls for leaves in one write, by ``flush()``.
    @exclusivity(unchecked) private var outgoing: ByteOutputBuffer
    /// This connection's number, for where its first ping falls in the interval.
    private let number: Int

    init(shared: WebSocketLoop, number: Int) {
        self.shared = shared
        let worker = shared.worker
        self.worker = worker
        workerRef = Unmanaged.passUnretained(worker)
        self.number = number
        path = shared.paths[number % shared.paths.count]
        settings = worker.config.ws
        phase = Pattern.phase(of: number)
        size = worker.config.size
        openLoop = worker.config.isOpenLoop
        let pipeline = settings.workload == .echo ? worker.config.pipeline : 64
        times = SendTimes(capacity: openLoop ? 1024 : pipeline)
        sentTimes = SendTimes(capacity: openLoop ? 1024 : 1)
        let workloadBytes = WebSocketFrame.clientFrameSize(payloadCount: size) * pipeline
        outgoing = ByteOutputBuffer(capacity: workloadBytes)
        session = Self.freshSession(settings)
        if worker.tls == nil && !settings.socketTransport {
            transport = WebSocketLoopTransport(worker: worker, workloadBytes: workloadBytes)
        } else {
            transport = SocketByteTransport<WebSocketConnection>(worker: worker)
        }
        transport.attach(Unmanaged.passUnretained(self))
    }

    deinit {
        session.deallocate()
        outgoing.deallocate()
    }

    private static func freshSession(_ settings: WebSocketSettings) -> WebSocketSession {
        WebSocketSession(
            handshake: WebSocketHandshake(subprotocols: settings.subprotocols), maxMessage: settings.maxMessage)
    }

    func start() {
        // The session made with the connection is fresh.
        state = .connecting
        transport.connect()
    }

    /// Connects again with a fresh session, to replace a connection the server closed normally.
    private func reconnect() {
        state = .connecting
        nextSend = 0
        nextReceive = 0
        outgoing.removeAll()
        session.deallocate()
        session = Self.freshSession(settings)
        transport.connect()
    }

    func stop() {
        cancelTimers()
        guard state == .open || state == .connecting else { return }
        if state == .open, session.phase == .open {
            send(session.close(code: 1000))
            transport.close(afterWriting: true)
        } else {
            transport.close(afterWriting: false)
        }
    }

    // MARK: Open loop and timeouts

    var hasRoom: Bool {
        state == .open && !reconnecting && nextSend &- nextReceive < UInt64(times.capacity) && !transport.isBackedUp
    }

    func sendPaced(intended: UInt64) {
        sentTimes[nextSend] = worker.paceNow
        queueMessage(at: intended)
        flush()
    }

    func expireRequests(sentBefore cutoff: UInt64) {
        guard state == .open, nextSend != nextReceive, times[nextReceive] < cutoff else { return }
        let what = settings.workload == .echo ? "echo of a message" : "pong"
        fail(.timeout, "no \(what) within \(worker.config.timeout) s")
    }

    // MARK: Sending

    /// An echo message: the pattern for its sequence number, framed and masked in place at the end of
    /// ``outgoing`` (the messages one read completes leave in one write, by ``flush()``).
    @inline(__always)
    private func queueMessage(at time: UInt64) {
        let key = maskKeys.next()
        times[nextSend] = time
        let sequence = nextSend
        nextSend &+= 1
        let size = self.size
        let phase = self.phase
        let pattern = self.pattern
        outgoing.append(WebSocketFrame.clientFrameSize(payloadCount: size)) { frame in
            let offset = WebSocketFrame.payloadOffset(payloadCount: size)
            pattern.fillMessage(
                UnsafeMutableRawBufferPointer(start: frame + offset, count: size), sequence: sequence, phase: phase)
            WebSocketFrame.writeClientFrame(.binary, payload: nil, payloadCount: size, maskKey: key, into: frame)
        }
    }

    /// Writes the queued messages, if any, in one write.
    @inline(__always)
    private func flush() {
        guard !outgoing.isEmpty else { return }
        transport.write(outgoing.bytes)
        outgoing.removeAll()
    }

    /// Writes `frame` after the messages queued before it.
    private func send(_ frame: [UInt8]) {
        flush()
        frame.withUnsafeBytes { transport.write($0) }
    }

    /// Heartbeat: the ping due at `nextPing` (its payload the sequence number), then the timer for the next.
    /// A connection whose bytes wait for the kernel skips the ping (it would only queue behind them).
    private func sendPing(interval: UInt64) {
        pingTimer = .invalid
        guard state == .open, !worker.stopping, !transport.isBackedUp,
            nextSend &- nextReceive < UInt64(times.capacity)
        else {
            schedulePing(interval: interval)
            return
        }
        times[nextSend] = nextPing
        var sequence = nextSend.littleEndian
        nextSend &+= 1
        send(withUnsafeBytes(of: &sequence) { session.frame(.ping, $0) })
        schedulePing(interval: interval)
    }

    private func schedulePing(interval: UInt64) {
        nextPing &+= interval
        pingTimer = worker.loop.scheduleOnLoop(at: nextPing) { [unowned self] in self.sendPing(interval: interval) }
    }

    private func cancelTimers() {
        if pingTimer != .invalid {
            worker.loop.cancelOnLoop(pingTimer)
            pingTimer = .invalid
        }
        if handshakeTimer != .invalid {
            worker.loop.cancelOnLoop(handshakeTimer)
            handshakeTimer = .invalid
        }
    }

    // MARK: What the transport reports

    /// The TCP connection is up: the upgrade request goes (with TLS, behind the handshake), and the server has
    /// the connect timeout to answer it.
    func transportConnected() {
        guard state == .connecting else { return }
        let seconds = worker.connectTimeout
        handshakeTimer = worker.loop.scheduleOnLoop(
            at: Deadline.now().uptimeNanoseconds &+ LoadRunner.nanos(seconds)
        ) { [unowned self] in
            handshakeTimer = .invalid
            guard state == .connecting else { return }
            fail(.timeout, "no WebSocket handshake response within \(seconds) s")
        }
        let config = worker.config
        send(session.upgradeRequest(path: path, hostHeader: config.hostHeader, headers: config.http.headers))
    }

    /// The server's bytes (valid during the call): every step the session finds in them acted on, then what
    /// they called for sent in one write.
    @inline(__always)
    func transportReceived(_ bytes: UnsafeRawBufferPointer) {
        guard state == .connecting || state == .open else { return }
        var input = bytes
        if receive(&input, now: Deadline.now().uptimeNanoseconds) { flush() }
    }

    /// Bytes that waited for the kernel are out: requests the schedule could not place meanwhile may go now.
    func transportDrained() {
        guard openLoop, state == .open, !worker.stopping else { return }
        let now = Deadline.now().uptimeNanoseconds
        if worker.nextPaceAt <= now { worker.pace(now: now) }
    }

    /// The connection is gone (`failure` says why, nil when this side closed it): counted, or replaced when
    /// the server closed it normally with nothing outstanding.
    func transportClosed(_ failure: ConnectionFailure?) {
        cancelTimers()
        let previous = state
        state = .closed
        if worker.replaceableConnectionEnded(from: previous, replacing: &reconnecting, error: nil) {
            reconnect()
        } else if let failure {
            worker.recordError(failure.kind, failure.message)
        }
    }

    // MARK: Receiving

    /// Acts on every step the session finds in `input`; false when the connection is ending.
    @inline(__always)
    private func receive(_ input: inout UnsafeRawBufferPointer, now: UInt64) -> Bool {
        do {
            while !input.isEmpty || session.hasPendingStep {
                // Whole binary messages (the echo workload's) first, past the general path's bookkeeping.
                if let payload = session.nextWholeBinaryMessage(&input) {
                    guard message(payload, text: false, now: now) else { return false }
                    continue
                }
                guard let step = try session.next(&input) else { return true }
                switch step {
                case .opened:
                    opened(now: now)
                case .message(let text, let payload):
                    guard message(payload, text: text, now: now) else { return false }
                case .pong(let payload):
                    pong(payload, now: now)
                case .send(let bytes):
                    // After the messages queued before it: a pong may go between messages, a close only last.
                    send(bytes)
                case .closed(let code, let reason):
                    serverClosed(code: code, reason: reason)
                    return false
                }
            }
            return true
        } catch {
            outgoing.removeAll()
            if let close = session.failure(error) { send(close) }
            fail(error.kind, error.description, after: true)
            return false
        }
    }

    /// The handshake is done: the connection counts as open and its workload starts.
    private func opened(now: UInt64) {
        if handshakeTimer != .invalid {
            worker.loop.cancelOnLoop(handshakeTimer)
            handshakeTimer = .invalid
        }
        state = .open
        worker.replaceableConnectionOpened(replacing: &reconnecting)
        if worker.stopping { return }
        if let greeting = settings.greeting {
            send(Array(greeting.utf8).withUnsafeBytes { session.frame(.text, $0) })
        }
        switch settings.workload {
        case .echo:
            if !openLoop { for _ in 0..<worker.config.pipeline { queueMessage(at: now) } }
        case .heartbeat(let seconds):
            // Spread over the interval by connection number, so the pings of many connections do not bunch.
            let interval = UInt64(seconds * 1e9)
            let spread = UInt64(number) &* 0x9E37_79B9 % max(interval, 1)
            nextPing = now &+ spread &- interval
            schedulePing(interval: interval)
        case .receive:
            break
        }
    }

    /// A message from the server; false when it failed the connection.
    @inline(__always)
    private func message(_ payload: UnsafeRawBufferPointer, text: Bool, now: UInt64) -> Bool {
        switch settings.workload {
        case .echo:
            guard nextReceive != nextSend else {
                fail(.mismatch, "the server sent a message nobody asked for (\(payload.count) bytes)")
                return false
            }
            guard !text, payload.count == size,
                pattern.checkMessage(payload, sequence: nextReceive, phase: phase)
            else {
                fail(.mismatch, "echoed message \(nextReceive) did not match what was sent (\(payload.count) bytes)")
                return false
            }
            let sequence = nextReceive
            nextReceive &+= 1
            let openLoop = self.openLoop
            let size = self.size
            let latency = now &- times[sequence]
            let service = openLoop ? now &- sentTimes[sequence] : 0
            let next = workerRef._withUnsafeGuaranteedRef { worker -> Bool in
                if openLoop {
                    worker.recordPacedReply(latency: latency, service: service, bytes: size, now: now)
                    if !worker.stopping && worker.nextPaceAt <= now { worker.pace(now: now) }
                    return false
                }
                worker.recordReply(latency: latency, bytes: size, now: now)
                return !worker.stopping
            }
            // Closed loop: each echo sends the next message.
            if next { queueMessage(at: now) }
        case .heartbeat:
            // Messages the server pushes to a held connection are counted as bytes only.
            worker.recordBytes(payload.count, now: now)
        case .receive:
            if let sent = WebSocketSettings.sendTime(payload) {
                let wall = WebSocketSettings.wallClockNanoseconds()
                worker.recordReply(latency: wall > sent ? wall - sent : 0, bytes: payload.count, now: now)
            } else {
                shared.recordUntimedMessage(bytes: payload.count, now: now)
            }
        }
        return true
    }

    /// Heartbeat: a pong carrying a ping's sequence number completes that ping (and any older ones the server
    /// answered only through it, as section 5.5.3 allows). Other pongs (unsolicited heartbeats) are ignored.
    private func pong(_ payload: UnsafeRawBufferPointer, now: UInt64) {
        guard case .heartbeat = settings.workload, payload.count == 8 else { return }
        let sequence = UInt64(littleEndian: payload.loadUnaligned(as: UInt64.self))
        guard sequence &- nextReceive < nextSend &- nextReceive else { return }
        worker.recordReply(latency: now &- times[sequence], bytes: 8, now: now)
        nextReceive = sequence &+ 1
    }

    /// The server's close frame arrived (and was answered): normal with nothing outstanding, the slot
    /// reconnects; otherwise an error.
    private func serverClosed(code: UInt16?, reason: String) {
        shared.recordServerClose(code)
        let normal = code == nil || code == 1000 || code == 1001
        let outstanding = nextSend != nextReceive
        if normal && !outstanding && !worker.stopping {
            reconnecting = true
        } else if normal {
            worker.recordError(
                .closed,
                "the server closed the WebSocket (\(code.map(String.init) ?? "no status")) with replies outstanding")
        } else {
            let said = reason.isEmpty ? "" : ": " + ServerText.escaped(reason, limit: 100)
            worker.recordError(.wsClose, "the server closed the WebSocket with status \(code!)\(said)")
        }
        cancelTimers()
        transport.close(afterWriting: true)
    }

    /// Counts `kind` and closes the connection (after the writes queued, such as a close frame, when `after`).
    private func fail(_ kind: ErrorKind, _ message: @autoclosure () -> String, after: Bool = false) {
        worker.recordError(kind, message())
        outgoing.removeAll()
        cancelTimers()
        transport.close(afterWriting: after)
    }
}
