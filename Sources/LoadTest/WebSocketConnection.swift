import EpollLoop
import FoundationEssentials
import Glibc
import LoopSocket

/// One `ws` mode connection: the opening handshake over TCP (or TLS: `wss://`), then one of the workloads of
/// ``WebSocketSettings/Workload``, with the protocol itself in a ``WebSocketSession``.
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
final class WebSocketConnection: GCDAsyncSocketDelegate, PacedConnection, SweptConnection {
    /// Bytes asked for per read: the socket never holds more than this (plus the parser's bounded buffers).
    static let readSize: UInt = 256 * 1024
    private static let handshakeTag = 1
    private static let frameTag = 2

    unowned(unsafe) let worker: LoopWorker
    unowned(unsafe) let shared: WebSocketLoop
    private let settings: WebSocketSettings
    /// The request path (several `--url`s: the connections take them in turn).
    private let path: String
    // The mutable state is loop-confined and never accessed across a call that could re-enter it, so it opts
    // out of dynamic exclusivity checks (as EchoConnection's does): each costs more than what it guards (the
    // socket's, compared on every read, was a third of the checks left per message under callgrind).
    @exclusivity(unchecked) private var socket: GCDAsyncSocket?
    @exclusivity(unchecked) private var session: WebSocketSession?
    @exclusivity(unchecked) private var state = ConnectionState.idle
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
    /// The server closed normally with nothing outstanding: the slot opens a new connection.
    @exclusivity(unchecked) private var reconnecting = false
    /// Echo messages framed and not yet written: `outgoingCount` bytes at the start of `outgoing`, which grows
    /// (doubling) when a read completes more messages than it holds.
    @exclusivity(unchecked) private var outgoing: UnsafeMutableRawBufferPointer
    @exclusivity(unchecked) private var outgoingCount = 0
    /// This connection's number, for where its first ping falls in the interval.
    private let number: Int

    init(shared: WebSocketLoop, number: Int) {
        self.shared = shared
        let worker = shared.worker
        self.worker = worker
        self.number = number
        path = shared.paths[number % shared.paths.count]
        settings = worker.config.ws
        phase = Pattern.phase(of: number)
        size = worker.config.size
        openLoop = worker.config.isOpenLoop
        let pipeline = settings.workload == .echo ? worker.config.pipeline : 64
        times = SendTimes(capacity: openLoop ? 1024 : pipeline)
        sentTimes = SendTimes(capacity: openLoop ? 1024 : 1)
        outgoing = .allocate(byteCount: WebSocketFrame.clientFrameSize(payloadCount: size) * pipeline, alignment: 16)
    }

    deinit {
        session?.deallocate()
        outgoing.deallocate()
    }

    func start() {
        connect(settling: true)
    }

    private func connect(settling: Bool) {
        state = .connecting
        nextSend = 0
        nextReceive = 0
        outgoingCount = 0
        session?.deallocate()
        session = WebSocketSession(
            handshake: WebSocketHandshake(subprotocols: settings.subprotocols),
            maxMessage: settings.maxMessage)
        socket = worker.connectSocket(self, settling: settling)
        if socket == nil { state = .closed }
    }

    func stop() {
        cancelPing()
        guard state == .open || state == .connecting, let socket else { return }
        if state == .open, session?.phase == .open, let close = session?.close(code: 1000) {
            socket.write(Data(close), withTimeout: -1, tag: 0)
            socket.disconnectAfterWriting()
        } else {
            socket.disconnect()
        }
    }

    // MARK: Open loop and timeouts

    var hasRoom: Bool {
        state == .open && !reconnecting && nextSend &- nextReceive < UInt64(times.capacity)
    }

    func sendPaced(intended: UInt64) {
        guard let socket else { return }
        sentTimes[nextSend] = worker.paceNow
        queueMessage(at: intended)
        flush(socket)
    }

    func expireRequests(sentBefore cutoff: UInt64) {
        guard state == .open, nextSend != nextReceive, times[nextReceive] < cutoff else { return }
        let what = settings.workload == .echo ? "echo of a message" : "pong"
        fail(.timeout, "no \(what) within \(worker.config.timeout) s")
    }

    // MARK: Sending

    /// An echo message: the pattern for its sequence number, framed and masked in place at the end of
    /// ``outgoing`` (the messages one read completes leave in one write, by ``flush(_:)``).
    private func queueMessage(at time: UInt64) {
        guard let key = session?.maskKeys.next() else { return }
        times[nextSend] = time
        let sequence = nextSend
        nextSend &+= 1
        let size = self.size
        let phase = self.phase
        let frameSize = WebSocketFrame.clientFrameSize(payloadCount: size)
        if outgoingCount + frameSize > outgoing.count {
            let grown = UnsafeMutableRawBufferPointer.allocate(
                byteCount: max(outgoing.count * 2, outgoingCount + frameSize), alignment: 16)
            grown.baseAddress!.copyMemory(from: outgoing.baseAddress!, byteCount: outgoingCount)
            outgoing.deallocate()
            outgoing = grown
        }
        let frame = outgoing.baseAddress! + outgoingCount
        let offset = WebSocketFrame.payloadOffset(payloadCount: size)
        Pattern.shared.fillMessage(
            UnsafeMutableRawBufferPointer(start: frame + offset, count: size), sequence: sequence, phase: phase)
        WebSocketFrame.writeClientFrame(.binary, payload: nil, payloadCount: size, maskKey: key, into: frame)
        outgoingCount += frameSize
    }

    /// Writes the queued messages, if any, in one write.
    private func flush(_ socket: GCDAsyncSocket) {
        guard outgoingCount > 0 else { return }
        socket.write(Data(bytes: outgoing.baseAddress!, count: outgoingCount), withTimeout: -1, tag: 0)
        outgoingCount = 0
    }

    /// Heartbeat: the ping due at `nextPing` (its payload the sequence number), then the timer for the next.
    private func sendPing(interval: UInt64) {
        pingTimer = .invalid
        guard state == .open, !worker.stopping, let socket, nextSend &- nextReceive < UInt64(times.capacity) else {
            schedulePing(interval: interval)
            return
        }
        times[nextSend] = nextPing
        var sequence = nextSend.littleEndian
        nextSend &+= 1
        if let frame = withUnsafeBytes(of: &sequence, { session?.frame(.ping, $0) }) {
            socket.write(Data(frame), withTimeout: -1, tag: 0)
        }
        schedulePing(interval: interval)
    }

    private func schedulePing(interval: UInt64) {
        nextPing &+= interval
        pingTimer = worker.loop.scheduleOnLoop(at: nextPing) { [unowned self] in self.sendPing(interval: interval) }
    }

    private func cancelPing() {
        guard pingTimer != .invalid else { return }
        worker.loop.cancelOnLoop(pingTimer)
        pingTimer = .invalid
    }

    // MARK: GCDAsyncSocketDelegate

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        guard sock === socket, let session else { return }
        // With TLS the request waits behind the handshake.
        let config = worker.config
        sock.write(
            Data(session.upgradeRequest(path: path, hostHeader: config.hostHeader, headers: config.http.headers)),
            withTimeout: -1, tag: 0)
        sock.readData(
            withTimeout: worker.connectTimeout, buffer: nil, bufferOffset: 0, maxLength: Self.readSize,
            tag: Self.handshakeTag)
    }

    func socketDidSecure(_ sock: GCDAsyncSocket) {
        worker.recordHandshake(sock)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        guard sock === socket else { return }
        let now = Deadline.now().uptimeNanoseconds
        let keepReading = data.withUnsafeBytes { bytes in
            var input = bytes
            return receive(&input, on: sock, now: now)
        }
        guard keepReading else { return }
        flush(sock)
        // Replies are timed out by the sweep (echo, heartbeat); a receiving connection may wait as long as the
        // server is quiet; a handshake still under way keeps its connect timeout.
        let timeout = state == .open ? -1 : worker.connectTimeout
        sock.readData(
            withTimeout: timeout, buffer: nil, bufferOffset: 0, maxLength: Self.readSize,
            tag: state == .open ? Self.frameTag : Self.handshakeTag)
    }

    /// Acts on every step the session finds in `input`; false when the connection is ending.
    private func receive(_ input: inout UnsafeRawBufferPointer, on sock: GCDAsyncSocket, now: UInt64) -> Bool {
        do {
            while let step = try session?.next(&input) {
                switch step {
                case .opened:
                    opened(sock, now: now)
                case .message(let text, let payload):
                    guard message(payload, text: text, now: now, on: sock) else { return false }
                case .pong(let payload):
                    pong(payload, now: now)
                case .send(let bytes):
                    // After the messages queued before it: a pong may go between messages, a close only last.
                    flush(sock)
                    sock.write(Data(bytes), withTimeout: -1, tag: 0)
                case .closed(let code, let reason):
                    serverClosed(code: code, reason: reason, on: sock)
                    return false
                }
            }
            return true
        } catch {
            outgoingCount = 0
            if let close = session?.failure(error) { sock.write(Data(close), withTimeout: -1, tag: 0) }
            fail(error.kind, error.description, after: true)
            return false
        }
    }

    /// The handshake is done: the connection counts as open and its workload starts.
    private func opened(_ sock: GCDAsyncSocket, now: UInt64) {
        state = .open
        worker.replaceableConnectionOpened(replacing: &reconnecting)
        if worker.stopping { return }
        if let greeting = settings.greeting,
            let frame = Array(greeting.utf8).withUnsafeBytes({ session?.frame(.text, $0) })
        {
            sock.write(Data(frame), withTimeout: -1, tag: 0)
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
    private func message(_ payload: UnsafeRawBufferPointer, text: Bool, now: UInt64, on sock: GCDAsyncSocket) -> Bool {
        switch settings.workload {
        case .echo:
            guard nextReceive != nextSend else {
                fail(.mismatch, "the server sent a message nobody asked for (\(payload.count) bytes)")
                return false
            }
            guard !text, payload.count == size,
                Pattern.shared.checkMessage(payload, sequence: nextReceive, phase: phase)
            else {
                fail(.mismatch, "echoed message \(nextReceive) did not match what was sent (\(payload.count) bytes)")
                return false
            }
            if openLoop {
                worker.recordPacedReply(
                    latency: now &- times[nextReceive], service: now &- sentTimes[nextReceive],
                    bytes: size, now: now)
            } else {
                worker.recordReply(latency: now &- times[nextReceive], bytes: size, now: now)
            }
            nextReceive &+= 1
            guard !worker.stopping else { return true }
            if openLoop {
                if worker.nextPaceAt <= now { worker.pace(now: now) }
            } else {
                queueMessage(at: now)
            }
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
    private func serverClosed(code: UInt16?, reason: String, on sock: GCDAsyncSocket) {
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
            worker.recordError(
                .wsClose,
                "the server closed the WebSocket with status \(code!)\(reason.isEmpty ? "" : ": \(reason.prefix(100))")"
            )
        }
        cancelPing()
        sock.disconnectAfterWriting()
    }

    /// Counts `kind` and closes the connection (after the writes queued, such as a close frame, when `after`).
    private func fail(_ kind: ErrorKind, _ message: @autoclosure () -> String, after: Bool = false) {
        worker.recordError(kind, message())
        outgoingCount = 0
        cancelPing()
        if after { socket?.disconnectAfterWriting() } else { socket?.disconnect() }
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        guard sock === socket else { return }
        cancelPing()
        let previous = state
        state = .closed
        if worker.replaceableConnectionEnded(from: previous, replacing: &reconnecting, error: err) {
            connect(settling: false)
        }
    }
}
