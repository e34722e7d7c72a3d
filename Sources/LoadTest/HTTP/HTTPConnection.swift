import EpollLoop
import FoundationEssentials
import LoopSocket

/// One keep-alive HTTP/1.1 connection sending the configured requests (`GET path` unless told otherwise; several
/// paths take turns), as wrk does: the head is read to CRLF CRLF, the body by its Content-Length or, with
/// `Transfer-Encoding: chunked`, chunk by chunk (size line, bytes, then trailers to the empty line); a status
/// other than 2xx counts as an error. Closed loop with `pipeline` requests in flight, or paced by the worker's
/// open-loop schedule. A response that announces `Connection: close` ends the connection, and a new one
/// takes its place. What a server sends is bounded (``HTTPResponseLimits``): a head or trailers over
/// `--max-head`, a body over `--max-body`, end the connection with an error; a body is read in pieces and
/// never held whole.
final class HTTPConnection: GCDAsyncSocketDelegate, PacedConnection, SweptConnection {
    static let headEnd = Data("\r\n\r\n".utf8)
    static let lineEnd = Data("\r\n".utf8)

    unowned(unsafe) let worker: LoopWorker
    /// The loop's requests and per-URL counts.
    unowned(unsafe) let shared: HTTPLoop
    // The state is loop-confined and never accessed across a call that could re-enter it, so it opts out of
    // dynamic exclusivity checks (as EchoConnection's does): each costs more than what it guards.
    @exclusivity(unchecked) private var socket: GCDAsyncSocket?
    private let requests: [Data]
    @exclusivity(unchecked) private var nextRequest: Int
    private let openLoop: Bool
    @exclusivity(unchecked) private var times: SendTimes
    /// Open loop: when each request actually went out (`times` holds when it was meant to), for service time.
    @exclusivity(unchecked) private var sentTimes: SendTimes
    /// The head's size while its body is read (the bytes received count both).
    @exclusivity(unchecked) private var pendingHeadBytes = 0
    @exclusivity(unchecked) private var nextSend: UInt64 = 0
    @exclusivity(unchecked) private var nextReceive: UInt64 = 0
    /// A chunked body's bytes so far (size lines, chunks, trailers), counted as received.
    @exclusivity(unchecked) private var chunkedBytes = 0
    /// A body that comes in pieces (chunks, or a long one by `Content-Length`) counted and checked as it
    /// arrives (``ResponseChecks/BodyScan``).
    @exclusivity(unchecked) private var bodyScan = ResponseChecks.BodyScan()
    /// The body bytes still to read: of a `Content-Length` body, or of the current chunk.
    @exclusivity(unchecked) private var bodyLeft = 0
    /// The trailer bytes so far after a chunked body (nil before them), bounded by `--max-head`.
    @exclusivity(unchecked) private var trailerBytes: Int?
    /// How much of a response is read (`--max-head`, `--max-body`).
    private let limits: HTTPResponseLimits
    /// A head (tag 1) or body (tag 2; chunked: tags 3 to 6) read is queued.
    @exclusivity(unchecked) private var readQueued = false
    @exclusivity(unchecked) private var pendingHead: HTTPResponseHead?
    @exclusivity(unchecked) private var state = LoadConnectionState.idle
    /// Set when the server said it closes: the close that follows is expected, and the slot reconnects.
    @exclusivity(unchecked) private var reconnecting = false
    /// What a response must be (status, body) to count as a success; whether its body is looked at.
    private let checks: ResponseChecks
    private let inspectsBody: Bool
    /// Several URLs: the index of the one the next response answers (responses come in the order sent).
    private let perURL: Bool
    @exclusivity(unchecked) private var receiveURL = 0
    /// One URL, statuses 2xx, no body check: a response is judged by two comparisons, as it always was.
    private let plain: Bool

    init(shared: HTTPLoop, number: Int) {
        self.shared = shared
        let worker = shared.worker
        self.worker = worker
        let config = worker.config
        requests = shared.requests
        nextRequest = number % requests.count
        openLoop = config.isOpenLoop
        times = SendTimes(capacity: openLoop ? 1024 : config.pipeline)
        sentTimes = SendTimes(capacity: openLoop ? 1024 : 1)
        checks = config.checks
        limits = config.httpLimits
        inspectsBody = checks.inspectsBody
        perURL = requests.count > 1
        plain = !perURL && checks == ResponseChecks()
    }

    func start() {
        connect(settling: true)
    }

    private func connect(settling: Bool) {
        state = .connecting
        nextSend = 0
        nextReceive = 0
        receiveURL = nextRequest
        readQueued = false
        pendingHead = nil
        trailerBytes = nil
        bodyScan = ResponseChecks.BodyScan()
        socket = worker.connectSocket(self, settling: settling)
        if socket == nil { state = .closed }
    }

    func stop() {
        guard state == .open || state == .connecting else { return }
        socket?.disconnect()
    }

    func expireRequests(sentBefore cutoff: UInt64) {
        guard state == .open, !reconnecting, nextSend != nextReceive, times[nextReceive] < cutoff, let socket else {
            return
        }
        worker.recordError(.timeout, "no HTTP response within \(worker.config.timeout) s")
        if perURL { shared.recordURLError(receiveURL) }
        socket.disconnect()
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

    var hasRoom: Bool { state == .open && !reconnecting && nextSend &- nextReceive < UInt64(times.capacity) }

    func sendPaced(intended: UInt64) {
        guard let socket else { return }
        sentTimes[nextSend] = worker.paceNow
        send(on: socket, at: intended)
    }

    private func send(on socket: GCDAsyncSocket, at time: UInt64) {
        times[nextSend] = time
        nextSend &+= 1
        socket.write(requests[nextRequest], withTimeout: -1, tag: 0)
        nextRequest += 1
        if nextRequest == requests.count { nextRequest = 0 }
        queueRead(socket)
    }

    /// Keeps a head read queued, even with nothing in flight: the socket then keeps its epoll interest instead
    /// of dropping and re-adding EPOLLIN around every request (two `epoll_ctl` calls), and an idle queued read
    /// arms no timer, since the worker's sweep times replies out.
    private func queueRead(_ socket: GCDAsyncSocket) {
        guard !readQueued else { return }
        readQueued = true
        socket.readData(to: Self.headEnd, withTimeout: worker.replyTimeout, maxLength: UInt(limits.maxHead), tag: 1)
    }

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        guard sock === socket else { return }
        state = .open
        worker.replaceableConnectionOpened(replacing: &reconnecting)
        guard !openLoop, !worker.stopping else { return }
        let now = Deadline.now().uptimeNanoseconds
        for _ in 0..<worker.config.pipeline { send(on: sock, at: now) }
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        guard sock === socket else { return }
        if tag == 1 {
            guard nextSend != nextReceive else {
                readQueued = false
                worker.recordError(.badResponse, "the server sent a response nobody asked for")
                sock.disconnect()
                return
            }
            guard let head = data.withUnsafeBytes({ HTTPResponseHead.parse($0) }) else {
                worker.recordError(
                    .badResponse, "response head could not be used (malformed): \(ServerText.escaped(data))")
                sock.disconnect()
                return
            }
            if head.hasChunkedBody {
                pendingHead = head
                pendingHeadBytes = data.count
                chunkedBytes = 0
                sock.readData(
                    to: Self.lineEnd, withTimeout: worker.replyTimeout, maxLength: HTTPChunkLine.maxLineLength, tag: 3)
                return
            }
            let length = head.bodyLength
            if length > 0 {
                guard length <= limits.maxBody else {
                    return bodyTooLarge(sock, "a response announced a body of \(length) bytes")
                }
                pendingHead = head
                pendingHeadBytes = data.count
                bodyLeft = length
                sock.readData(
                    toLength: UInt(min(length, HTTPResponseLimits.piece)), withTimeout: worker.replyTimeout, tag: 2)
                return
            }
            complete(sock, head: head, bodyBytes: 0, headBytes: data.count,
                     bodyPasses: !inspectsBody || checks.passes(body: UnsafeRawBufferPointer(start: nil, count: 0)))
        } else if tag == 2 {
            guard let head = pendingHead else { return }
            bodyLeft -= data.count
            if bodyLeft == 0 && data.count == head.bodyLength {
                // The whole body in one read: checked where it lies.
                pendingHead = nil
                complete(sock, head: head, bodyBytes: data.count, headBytes: pendingHeadBytes,
                         bodyPasses: !inspectsBody || data.withUnsafeBytes { checks.passes(body: $0) })
                return
            }
            data.withUnsafeBytes { bodyScan.feed($0, needle: inspectsBody ? checks.body : nil) }
            if bodyLeft > 0 {
                sock.readData(
                    toLength: UInt(min(bodyLeft, HTTPResponseLimits.piece)), withTimeout: worker.replyTimeout, tag: 2)
                return
            }
            pendingHead = nil
            let scan = bodyScan
            bodyScan = ResponseChecks.BodyScan()
            complete(sock, head: head, bodyBytes: scan.bytes, headBytes: pendingHeadBytes,
                     bodyPasses: !inspectsBody || scan.passes(checks))
        } else {
            readChunked(sock, data, tag: tag)
        }
    }

    /// The next piece of a chunked body: a size line (tag 3), the end of a chunk with its CRLF (tag 4), a piece
    /// of a long chunk (tag 6), or a trailer line (tag 5); the empty trailer line completes the response.
    private func readChunked(_ sock: GCDAsyncSocket, _ data: Data, tag: Int) {
        guard let head = pendingHead else { return }
        chunkedBytes += data.count
        switch tag {
        case 3:
            guard let size = data.withUnsafeBytes({ HTTPChunkLine.size($0) }) else {
                return badChunk(sock, "chunk size line could not be used: \(ServerText.escaped(data, limit: 100))")
            }
            guard bodyScan.bytes + size <= limits.maxBody else {
                return bodyTooLarge(sock, "a chunked response body reached \(bodyScan.bytes + size) bytes")
            }
            if size == 0 {
                trailerBytes = 0
                readTrailerLine(sock)
            } else {
                bodyLeft = size
                readChunkData(sock)
            }
        case 4, 6:
            let end = tag == 4 ? data.count - 2 : data.count
            guard tag == 6 || data.withUnsafeBytes({ HTTPChunkLine.endsChunk($0) }) else {
                return badChunk(sock, "a chunk was not followed by CRLF")
            }
            bodyLeft -= end
            data.withUnsafeBytes {
                bodyScan.feed(UnsafeRawBufferPointer(rebasing: $0[..<end]), needle: inspectsBody ? checks.body : nil)
            }
            if tag == 6 { return readChunkData(sock) }
            sock.readData(
                to: Self.lineEnd, withTimeout: worker.replyTimeout, maxLength: HTTPChunkLine.maxLineLength, tag: 3)
        default:
            trailerBytes = (trailerBytes ?? 0) + data.count
            guard data.withUnsafeBytes({ HTTPChunkLine.endsTrailers($0) }) else { return readTrailerLine(sock) }
            pendingHead = nil
            trailerBytes = nil
            let scan = bodyScan
            bodyScan = ResponseChecks.BodyScan()
            complete(sock, head: head, bodyBytes: chunkedBytes, headBytes: pendingHeadBytes,
                     bodyPasses: !inspectsBody || scan.passes(checks))
        }
    }

    /// The rest of the current chunk with its CRLF (tag 4), or the next piece of it when more is left.
    private func readChunkData(_ sock: GCDAsyncSocket) {
        if bodyLeft > HTTPResponseLimits.piece {
            sock.readData(toLength: UInt(HTTPResponseLimits.piece), withTimeout: worker.replyTimeout, tag: 6)
        } else {
            sock.readData(toLength: UInt(bodyLeft + 2), withTimeout: worker.replyTimeout, tag: 4)
        }
    }

    /// The next trailer line, within what `--max-head` leaves of the trailers (a longer line disconnects with
    /// `readMaxedOutError`, counted as `head_too_large`).
    private func readTrailerLine(_ sock: GCDAsyncSocket) {
        let left = limits.maxHead - (trailerBytes ?? 0)
        guard left >= 2 else {
            return headTooLarge(sock, "trailer fields over --max-head (\(limits.maxHead) bytes)")
        }
        sock.readData(to: Self.lineEnd, withTimeout: worker.replyTimeout,
                      maxLength: min(UInt(left), HTTPChunkLine.maxLineLength), tag: 5)
    }

    private func bodyTooLarge(_ sock: GCDAsyncSocket, _ what: String) {
        pendingHead = nil
        bodyScan = ResponseChecks.BodyScan()
        worker.recordError(.bodyTooLarge, "\(what), over --max-body (\(limits.maxBody) bytes)")
        sock.disconnect()
    }

    private func headTooLarge(_ sock: GCDAsyncSocket, _ what: String) {
        pendingHead = nil
        trailerBytes = nil
        bodyScan = ResponseChecks.BodyScan()
        worker.recordError(.headTooLarge, what)
        sock.disconnect()
    }

    private func badChunk(_ sock: GCDAsyncSocket, _ message: String) {
        pendingHead = nil
        bodyScan = ResponseChecks.BodyScan()
        worker.recordError(.badResponse, message)
        sock.disconnect()
    }

    private func complete(
        _ sock: GCDAsyncSocket, head: HTTPResponseHead, bodyBytes: Int, headBytes: Int, bodyPasses: Bool
    ) {
        let now = Deadline.now().uptimeNanoseconds
        readQueued = false
        let sentAt = times[nextReceive]
        if openLoop {
            worker.recordPacedReply(
                latency: now &- sentAt, service: now &- sentTimes[nextReceive], bytes: headBytes + bodyBytes, now: now)
        } else {
            worker.recordReply(latency: now &- sentAt, bytes: headBytes + bodyBytes, now: now)
        }
        nextReceive &+= 1
        if plain {
            if head.status < 200 || head.status > 299 { worker.recordError(.httpStatus, "HTTP status \(head.status)") }
        } else {
            judge(head, bodyBytes: bodyBytes, bodyPasses: bodyPasses, latency: now &- sentAt, now: now)
        }
        if worker.stopping { return }
        if head.closes {
            // The server closes after this response; the requests sent after it are lost with it.
            reconnecting = true
            sock.disconnect()
            return
        }
        if openLoop {
            if worker.nextPaceAt <= now { worker.pace(now: now) }
        } else {
            send(on: sock, at: now)
        }
        queueRead(sock)
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

    func socketDidSecure(_ sock: GCDAsyncSocket) {
        worker.recordHandshake(sock)
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        guard sock === socket else { return }
        let previous = state
        state = .closed
        var error = err
        if let maxed = err as? GCDAsyncSocketError, maxed.code == .readMaxedOutError {
            // A line or head that did not end within its limit: which one it was is ours to say.
            if trailerBytes != nil {
                worker.recordError(.headTooLarge, "trailer fields over --max-head (\(limits.maxHead) bytes)")
            } else if pendingHead != nil {
                worker.recordError(.badResponse, "a chunk size line over \(HTTPChunkLine.maxLineLength) bytes")
            } else {
                worker.recordError(.headTooLarge, "a response head over --max-head (\(limits.maxHead) bytes)")
            }
            error = nil
        }
        if worker.replaceableConnectionEnded(from: previous, replacing: &reconnecting, error: error) {
            connect(settling: false)
        }
    }
}
