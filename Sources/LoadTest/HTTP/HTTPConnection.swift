import EpollLoop

/// One keep-alive HTTP/1.1 connection sending the configured requests (`GET path` unless told otherwise; several
/// paths take turns), as wrk does; the responses are framed by an ``HTTPResponseReader`` from the bytes as they
/// arrive, and a status other than 2xx counts as an error. Closed loop with `pipeline` requests in flight, or
/// paced by the worker's open-loop schedule. A response that announces `Connection: close` ends the connection,
/// and a new one takes its place. What a server sends is bounded (``HTTPResponseLimits``): a head or trailers
/// over `--max-head`, a body over `--max-body`, end the connection with an error; a body is counted (and
/// checked) as it arrives and never held.
///
/// A load generator is the yardstick for servers, so its own cost per request must stay out of the
/// measurement: over `http://` the connection talks to the kernel itself, through a ``LoopTCPSocket`` on the
/// worker's loop (one `recv` into the loop's scratch buffer, parsed in place; the requests one read calls for
/// written in place and sent with one `send`), as echo mode's ``EchoConnection`` does. Over `https://` its
/// bytes go through GCDAsyncSocket and its TLS (``SocketByteTransport``). Everything else serves both.
///
/// Replies are timed out by the worker's sweep (``expireRequests(sentBefore:)``), the connect by the socket.
final class HTTPConnection: LoopTCPSocketOwner, ByteTransportOwner, PacedConnection, SweptConnection {
    typealias Output = ByteOutputBuffer

    // The worker outlives its connections (it holds them), hence unowned(unsafe): no reference counting.
    unowned(unsafe) let worker: LoopWorker
    private let workerRef: Unmanaged<LoopWorker>
    /// The loop's requests and per-URL counts.
    unowned(unsafe) let shared: HTTPLoop
    // The state is loop-confined and never accessed across a call that could re-enter it, so it opts out of
    // dynamic exclusivity checks (as EchoConnection's does): each costs more than what it guards.
    /// `http://`: the socket on the worker's loop (for good: a reconnect goes through it again). Made for
    /// `https://` too but never connected: not optional, so the hot path reaches it without binding an
    /// optional (a retain and a release each time).
    private let socket: LoopTCPSocket<HTTPConnection>
    /// `https://`: GCDAsyncSocket with its TLS.
    private let secure: SocketByteTransport<HTTPConnection>?
    private let isSecure: Bool
    private let requests: [[UInt8]]
    @exclusivity(unchecked) private var nextRequest: Int
    @exclusivity(unchecked) private var reader: HTTPResponseReader
    private let openLoop: Bool
    @exclusivity(unchecked) private var times: SendTimes
    /// Open loop: when each request actually went out (`times` holds when it was meant to), for service time.
    @exclusivity(unchecked) private var sentTimes: SendTimes
    @exclusivity(unchecked) private var nextSend: UInt64 = 0
    @exclusivity(unchecked) private var nextReceive: UInt64 = 0
    @exclusivity(unchecked) private var state = LoadConnectionState.idle
    /// Set when the server said it closes: the close that follows is expected, and the slot reconnects.
    @exclusivity(unchecked) private var reconnecting = false
    /// What a response must be (status, body) to count as a success.
    private let checks: ResponseChecks
    private let limits: HTTPResponseLimits
    /// Several URLs: the index of the one the next response answers (responses come in the order sent).
    private let perURL: Bool
    @exclusivity(unchecked) private var receiveURL = 0
    /// One URL, statuses 2xx, no body check: a response is judged by two comparisons.
    private let plain: Bool

    init(shared: HTTPLoop, number: Int) {
        self.shared = shared
        let worker = shared.worker
        self.worker = worker
        workerRef = Unmanaged.passUnretained(worker)
        let config = worker.config
        requests = shared.requests
        nextRequest = number % requests.count
        openLoop = config.isOpenLoop
        let inFlight = openLoop ? 1024 : config.pipeline
        times = SendTimes(capacity: inFlight)
        sentTimes = SendTimes(capacity: openLoop ? 1024 : 1)
        checks = config.checks
        limits = config.httpLimits
        reader = HTTPResponseReader(limits: limits, checks: checks)
        perURL = requests.count > 1
        plain = !perURL && checks == ResponseChecks()
        // Closed loop: at most `pipeline` requests are unanswered, so at most that many can be unsent; open loop:
        // nothing is paced onto a connection whose bytes wait (``hasRoom``).
        isSecure = worker.tls != nil
        let largest = isSecure ? 1 : requests.map(\.count).max() ?? 0
        socket = LoopTCPSocket(worker: worker, output: ByteOutputBuffer(capacity: largest * (openLoop ? 1 : inFlight)))
        secure = isSecure ? SocketByteTransport(worker: worker) : nil
        secure?.attach(Unmanaged.passUnretained(self))
    }

    // MARK: Connecting

    func start() {
        connect()
    }

    private func connect() {
        state = .connecting
        nextSend = 0
        nextReceive = 0
        receiveURL = nextRequest
        reader = HTTPResponseReader(limits: limits, checks: checks)
        if isSecure { secure.unsafelyUnwrapped.connect() } else { socket.connect(for: self) }
    }

    /// The TCP connection is up (`http://`).
    func socketConnected() {
        opened()
    }

    /// The TCP connection is up (`https://`: the requests wait behind the handshake).
    func transportConnected() {
        opened()
    }

    private func opened() {
        guard state == .connecting else { return }
        state = .open
        worker.replaceableConnectionOpened(replacing: &reconnecting)
        guard !openLoop, !worker.stopping else { return }
        let now = Deadline.now().uptimeNanoseconds
        for _ in 0..<worker.config.pipeline { queueRequest(at: now) }
        flush()
    }

    func handleIO(_ events: IOEvents) {
        socket.handle(events)
    }

    func loopWillShutDown() {
        socket.loopWillShutDown()
    }

    // MARK: LoadConnection

    func stop() {
        guard state == .open || state == .connecting else { return }
        close()
    }

    func expireRequests(sentBefore cutoff: UInt64) {
        guard state == .open, !reconnecting, nextSend != nextReceive, times[nextReceive] < cutoff else { return }
        if perURL { shared.recordURLError(receiveURL) }
        fail(.timeout, "no HTTP response within \(worker.config.timeout) s")
    }

    func countUnfinished(sentBefore cutoff: UInt64) {
        guard state == .open, !reconnecting else { return }
        var sequence = nextReceive
        var url = receiveURL
        while sequence != nextSend && times[sequence] < cutoff {
            worker.recordError(
                .unfinished,
                "no HTTP response when the run ended, after the whole measured \(worker.config.duration) s")
            if perURL {
                shared.recordURLError(url)
                url = url + 1 == requests.count ? 0 : url + 1
            }
            sequence &+= 1
        }
    }

    var hasRoom: Bool {
        state == .open && !reconnecting && nextSend &- nextReceive < UInt64(times.capacity)
            && !socket.isBackedUp
    }

    func sendPaced(intended: UInt64) {
        sentTimes[nextSend] = workerRef._withUnsafeGuaranteedRef { $0.paceNow }
        queueRequest(at: intended)
        flush()
    }

    /// Room again (`http://`): requests the schedule could not place meanwhile may go now.
    func socketDrained() {
        guard openLoop, state == .open, !worker.stopping else { return }
        let now = Deadline.now().uptimeNanoseconds
        if worker.nextPaceAt <= now { worker.pace(now: now) }
    }

    // MARK: Sending

    /// Writes the next request (in place, behind any that wait, over `http://`) and notes its (intended) send
    /// time; ``flush()`` sends what was written.
    @inline(__always)
    private func queueRequest(at time: UInt64) {
        times[nextSend] = time
        nextSend &+= 1
        requests[nextRequest].withUnsafeBytes { bytes in
            if isSecure { secure.unsafelyUnwrapped.write(bytes) } else { socket.output.append(bytes) }
        }
        nextRequest += 1
        if nextRequest == requests.count { nextRequest = 0 }
    }

    /// Sends the requests written since the last flush, in one `send` (`https://`: they are on their way).
    @inline(__always)
    private func flush() {
        if !isSecure { socket.flush() }
    }

    // MARK: Receiving

    /// The server's bytes (`http://`), in the loop's scratch buffer.
    @inline(__always)
    func socketReceived(_ bytes: UnsafeRawBufferPointer) {
        received(bytes)
    }

    /// The server's bytes (`https://`).
    func transportReceived(_ bytes: UnsafeRawBufferPointer) {
        received(bytes)
    }

    /// Every response the bytes complete is counted and judged, and in the closed loop answered by the next
    /// request; the requests go out together after the read.
    @inline(__always)
    private func received(_ bytes: UnsafeRawBufferPointer) {
        // The worker by a reference that is not retained around the calls (an unowned(unsafe) one would be).
        workerRef._withUnsafeGuaranteedRef { received(bytes, worker: $0) }
    }

    @inline(__always)
    private func received(_ bytes: UnsafeRawBufferPointer, worker: LoopWorker) {
        guard state == .open else { return }
        let now = Deadline.now().uptimeNanoseconds
        var input = bytes
        // (A request paced from a response's completion can fail its send and close the connection.)
        while !input.isEmpty && state == .open {
            if nextSend == nextReceive && reader.isBetweenResponses {
                return fail(.badResponse, "the server sent a response nobody asked for")
            }
            switch reader.next(&input) {
            case .response(let head, let headBytes, let bodyBytes, let bodyPasses):
                guard completed(head, bytes: headBytes + bodyBytes, bodyBytes: bodyBytes, bodyPasses: bodyPasses,
                                now: now, worker: worker) else { return }
            case .needMore:
                break
            case .failed(let kind, let message):
                return fail(kind, message)
            }
        }
        if state == .open { flush() }
    }

    /// Counts a whole response; false when the connection goes no further (the run is stopping, or the server
    /// closes after it).
    @inline(__always)
    private func completed(
        _ head: HTTPResponseHead, bytes: Int, bodyBytes: Int, bodyPasses: Bool, now: UInt64, worker: LoopWorker
    ) -> Bool {
        let sentAt = times[nextReceive]
        if openLoop {
            worker.recordPacedReply(
                latency: now &- sentAt, service: now &- sentTimes[nextReceive], bytes: bytes, now: now)
        } else {
            worker.recordReply(latency: now &- sentAt, bytes: bytes, now: now)
        }
        nextReceive &+= 1
        if plain {
            if head.status < 200 || head.status > 299 { worker.recordError(.httpStatus, "HTTP status \(head.status)") }
        } else {
            judge(head, bodyBytes: bodyBytes, bodyPasses: bodyPasses, latency: now &- sentAt, now: now)
        }
        if worker.stopping { return false }
        if head.closes {
            // The server closes after this response; the requests sent after it are lost with it.
            reconnecting = true
            close()
            return false
        }
        if openLoop {
            if worker.nextPaceAt <= now { worker.pace(now: now) }
        } else {
            queueRequest(at: now)
        }
        return true
    }

    /// Counts a response against its URL (several `--url`s) and the checks (`--expect-*`).
    private func judge(_ head: HTTPResponseHead, bodyBytes: Int, bodyPasses: Bool, latency: UInt64, now: UInt64) {
        let url = receiveURL
        if perURL {
            receiveURL = url + 1 == requests.count ? 0 : url + 1
            shared.recordURLReply(url, latency: latency, now: now)
        }
        if !checks.accepts(status: head.status) {
            worker.recordError(.httpStatus, "HTTP status \(head.status)")
            if perURL { shared.recordURLError(url) }
        } else if !bodyPasses {
            let paths = worker.config.http.paths
            worker.recordError(
                .check, checks.failure(bodyBytes: bodyBytes, path: paths.isEmpty ? worker.config.path : paths[url]))
            if perURL { shared.recordURLError(url) }
        }
    }

    // MARK: Closing

    /// Counts the failure and closes the connection.
    @inline(never)
    private func fail(_ kind: ErrorKind, _ message: String) {
        worker.recordError(kind, message)
        close()
    }

    private func close() {
        if isSecure { secure.unsafelyUnwrapped.close(afterWriting: false) } else { socket.close() }
    }

    /// The socket closed (`http://`): the connect failed, the server or this side closed it, or the loop went.
    func socketClosed(_ end: LoopTCPSocketEnd, wasOpen: Bool) {
        ended(end.failure)
    }

    /// The connection is gone (`https://`).
    func transportClosed(_ failure: ConnectionFailure?) {
        ended(failure)
    }

    /// Counts the end (a connect that failed settled, an open connection gone, `failure` if any), or, when the
    /// server announced it, connects again in the same slot: from the loop's queue, never from inside the
    /// socket's own call.
    private func ended(_ failure: ConnectionFailure?) {
        let previous = state
        state = .closed
        if worker.replaceableConnectionEnded(from: previous, replacing: &reconnecting, error: nil) {
            worker.loop.executeOnLoop { [self] in connect() }
        } else if let failure {
            worker.recordError(failure.kind, failure.message)
        }
    }
}
