import EpollLoop
import FoundationEssentials
import LoopSocket

/// One connection speaking a ``LoadProtocol`` (tcp mode's, or a user's): the optional greeting exchange, then
/// numbered requests, closed loop with `--pipeline` in flight or paced by the worker's open-loop schedule,
/// and the bytes received framed into replies by the protocol, oldest request first.
///
/// What has arrived and is not framed yet is kept, and only up to `--reply-max` bytes: a reply that cannot
/// be framed within them is a `reply_too_large` error and closes the connection, so a server that floods
/// (or a framing that never completes) cannot make the client buffer without bound. A reply is checked against
/// `--expect-body` (the one given, or the one in step with its request when several rotate) and
/// `--expect-length`. Through GCDAsyncSocket, so TLS works as in http mode; replies are timed out by the
/// worker's sweep.
final class FramedConnection<P: LoadProtocol>: SocketConnection, PacedConnection, SweptConnection {
    unowned(unsafe) let worker: LoopWorker
    private let proto: P
    private let number: Int
    private let replyMax: Int
    private let checks: ResponseChecks
    private let openLoop: Bool
    var socket: GCDAsyncSocket?
    var state = ConnectionState.idle
    /// Connected, greeting sent, its answer not yet framed (the connection is not settled until it is).
    private var greeting = false
    /// A failure is closing the connection (the disconnect's callback may come later).
    private var closing = false
    private var times: SendTimes
    private var sentTimes: SendTimes
    private var nextSend: UInt64 = 0
    private var nextReceive: UInt64 = 0
    /// Bytes received and not framed yet start at `input[consumed]`.
    private var input: [UInt8] = []
    private var consumed = 0
    /// Requests built before one write.
    private var output: [UInt8] = []

    init(worker: LoopWorker, proto: P, number: Int, replyMax: Int) {
        self.worker = worker
        self.proto = proto
        self.number = number
        self.replyMax = replyMax
        checks = worker.config.checks
        openLoop = worker.config.isOpenLoop
        times = SendTimes(capacity: openLoop ? 1024 : worker.config.pipeline)
        sentTimes = SendTimes(capacity: openLoop ? 1024 : 1)
    }

    func expireRequests(sentBefore cutoff: UInt64) {
        guard state == .open, nextSend != nextReceive, times[nextReceive] < cutoff, let socket else { return }
        worker.recordError(.timeout, "no \(proto.name) reply within \(worker.config.timeout) s")
        socket.disconnect()
    }

    var hasRoom: Bool { state == .open && nextSend &- nextReceive < UInt64(times.capacity) }

    func sendPaced(intended: UInt64) {
        guard let socket else { return }
        sentTimes[nextSend] = worker.paceNow
        queueRequest(at: intended)
        flush(socket)
    }

    // MARK: GCDAsyncSocketDelegate

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        guard sock === socket else { return }
        sock.readData(withTimeout: -1, tag: 0)
        if let hello = proto.greeting(connection: number) {
            greeting = true
            sock.write(Data(hello), withTimeout: -1, tag: 0)
            // The answer may be empty: frame what there is (nothing) now.
            frame(sock)
        } else {
            becomeOpen(sock)
        }
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        guard sock === socket else { return }
        input.append(contentsOf: data)
        frame(sock)
        guard state != .closed && !closing else { return }
        if consumed > 0 {
            input.removeFirst(consumed)
            consumed = 0
        }
        sock.readData(withTimeout: -1, tag: 0)
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        ended(sock, error: err)
    }

    // MARK: Traffic

    private func becomeOpen(_ sock: GCDAsyncSocket) {
        greeting = false
        state = .open
        worker.connectionSettled(ok: true)
        guard !openLoop, !worker.stopping else { return }
        let now = Deadline.now().uptimeNanoseconds
        for _ in 0..<worker.config.pipeline { queueRequest(at: now) }
        flush(sock)
    }

    private func queueRequest(at time: UInt64) {
        times[nextSend] = time
        proto.request(sequence: nextSend, connection: number, into: &output)
        nextSend &+= 1
    }

    private func flush(_ sock: GCDAsyncSocket) {
        guard !output.isEmpty else { return }
        sock.write(Data(output), withTimeout: -1, tag: 0)
        output.removeAll(keepingCapacity: true)
    }

    /// Frames every reply the input holds; in the closed loop, sends as many new requests.
    private func frame(_ sock: GCDAsyncSocket) {
        var completed = 0
        var now: UInt64 = 0
        while state != .closed && !closing {
            let pending = input.count - consumed
            let framing = input.withUnsafeBytes { bytes in
                let rest = UnsafeRawBufferPointer(rebasing: bytes[consumed...])
                return greeting ? proto.frameGreetingReply(rest) : nextReceive != nextSend
                    ? proto.frameReply(rest, sequence: nextReceive) : nil
            }
            guard let framing else {
                if pending > 0 { return fail(sock, .badResponse, "the server sent bytes nobody asked for") }
                break
            }
            switch framing {
            case .needMore:
                if pending > replyMax {
                    return fail(sock, .replyTooLarge, "no \(proto.name) reply could be framed within "
                                + "\(pending) bytes (--reply-max \(replyMax))")
                }
            case .malformed(let why):
                return fail(sock, .badResponse, "\(proto.name) reply \(nextReceive): \(why)")
            case .reply(let length), .errorReply(let length, _):
                guard length >= (greeting ? 0 : 1), length <= pending else {
                    return fail(sock, .badResponse, "the framing of \(proto.name) reply \(nextReceive) said "
                                + "\(length) bytes of the \(pending) received")
                }
                if length > replyMax {
                    return fail(sock, .replyTooLarge, "\(proto.name) reply \(nextReceive) is \(length) bytes "
                                + "(--reply-max \(replyMax))")
                }
                if greeting {
                    consumed += length
                    if case .errorReply(_, let why) = framing {
                        return fail(sock, .errorReply, "the greeting was refused: \(why)")
                    }
                    becomeOpen(sock)
                    continue
                }
                if now == 0 { now = Deadline.now().uptimeNanoseconds }
                record(framing, length: length, now: now)
                consumed += length
                completed += 1
                continue
            }
            break
        }
        guard state == .open, !worker.stopping, completed > 0 else { return }
        if openLoop {
            if worker.nextPaceAt <= now { worker.pace(now: now) }
        } else {
            for _ in 0..<completed { queueRequest(at: now) }
            flush(sock)
        }
    }

    /// Counts the reply to the oldest request, `length` bytes at `input[consumed]`, and checks it.
    private func record(_ framing: ReplyFraming, length: Int, now: UInt64) {
        let sequence = nextReceive
        nextReceive &+= 1
        if openLoop {
            worker.recordPacedReply(latency: now &- times[sequence], service: now &- sentTimes[sequence],
                                    bytes: length, now: now)
        } else {
            worker.recordReply(latency: now &- times[sequence], bytes: length, now: now)
        }
        if case .errorReply(_, let why) = framing {
            worker.recordError(.errorReply, "\(proto.name) reply \(sequence): \(why)")
        } else if checks.inspectsBody {
            let passes = input.withUnsafeBytes { bytes in
                checks.passes(body: UnsafeRawBufferPointer(rebasing: bytes[consumed..<consumed + length]),
                              rotation: sequence)
            }
            if !passes {
                worker.recordError(.check, checks.failure(bodyBytes: length, path: "request \(sequence)",
                                                          rotation: sequence))
            }
        }
    }

    private func fail(_ sock: GCDAsyncSocket, _ kind: ErrorKind, _ message: String) {
        closing = true
        worker.recordError(kind, message)
        sock.disconnect()
    }
}
