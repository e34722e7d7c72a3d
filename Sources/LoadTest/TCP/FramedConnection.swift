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
    /// `checks.inspectsBody`, kept: asking the checks copies one of their arrays (a retain and a release).
    private let inspectsBody: Bool
    private let openLoop: Bool
    @exclusivity(unchecked) var socket: GCDAsyncSocket?
    // The mutable state is loop-confined and never accessed across a call that could re-enter it, so it opts
    // out of dynamic exclusivity checks (as EchoConnection's does): each costs more than what it guards.
    @exclusivity(unchecked) var state = LoadConnectionState.idle
    /// Connected, greeting sent, its answer not yet framed (the connection is not settled until it is).
    @exclusivity(unchecked) private var greeting = false
    /// A failure is closing the connection (the disconnect's callback may come later).
    @exclusivity(unchecked) private var closing = false
    @exclusivity(unchecked) private var times: SendTimes
    @exclusivity(unchecked) private var sentTimes: SendTimes
    @exclusivity(unchecked) private var nextSend: UInt64 = 0
    @exclusivity(unchecked) private var nextReceive: UInt64 = 0
    /// The start of a reply split between reads: bytes received and not framed yet. Empty when the last read
    /// ended at a reply's end, the common case, in which the next read is framed in place and nothing is
    /// copied.
    @exclusivity(unchecked) private var input: [UInt8] = []
    /// Requests built before one write.
    @exclusivity(unchecked) private var output: [UInt8] = []

    init(worker: LoopWorker, proto: P, number: Int, replyMax: Int) {
        self.worker = worker
        self.proto = proto
        self.number = number
        self.replyMax = replyMax
        checks = worker.config.checks
        inspectsBody = checks.inspectsBody
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
            _ = frame(sock, UnsafeRawBufferPointer(start: nil, count: 0))
        } else {
            becomeOpen(sock)
        }
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        guard sock === socket else { return }
        if input.isEmpty {
            data.withUnsafeBytes { chunk in
                let used = frame(sock, chunk)
                if used < chunk.count && !closing && state != .closed {
                    input.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[used...]))
                }
            }
        } else {
            // A reply split between reads: framed from the bytes kept, moved out of `input` while it is framed
            // (and back after, with its capacity).
            var buffered = input
            input = []
            buffered.append(contentsOf: data)
            let used = buffered.withUnsafeBytes { frame(sock, $0) }
            buffered.removeFirst(used)
            input = buffered
        }
        // The next read, queued per read: cheaper than continuous mode (`beginReceiving`), whose every check
        // for bytes wanted takes a lock.
        guard !closing && state != .closed else { return }
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
        // Through `Data(bytes:count:)`: one copy, without the generic sequence initialiser's conformance checks.
        output.withUnsafeBytes { sock.write(Data(bytes: $0.baseAddress!, count: $0.count), withTimeout: -1, tag: 0) }
        output.removeAll(keepingCapacity: true)
    }

    /// Frames every reply at the start of `bytes` (what has arrived and is not framed yet, from the start of a
    /// reply or of the greeting's answer) and returns how many bytes they took; in the closed loop, sends as
    /// many new requests.
    private func frame(_ sock: GCDAsyncSocket, _ bytes: UnsafeRawBufferPointer) -> Int {
        var used = 0
        var completed = 0
        var now: UInt64 = 0
        framing: while state != .closed && !closing {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[used...])
            let framing: ReplyFraming
            if greeting {
                framing = proto.frameGreetingReply(rest)
            } else if nextReceive != nextSend {
                framing = proto.frameReply(rest, sequence: nextReceive)
            } else {
                if !rest.isEmpty { fail(sock, .badResponse, "the server sent bytes nobody asked for") }
                break
            }
            switch framing {
            case .needMore:
                if rest.count > replyMax {
                    fail(sock, .replyTooLarge, "no \(proto.name) reply could be framed within "
                         + "\(rest.count) bytes (--reply-max \(replyMax))")
                }
                break framing
            case .malformed(let why):
                fail(sock, .badResponse, "\(proto.name) reply \(nextReceive): \(why)")
                break framing
            case .reply(let length), .errorReply(let length, _):
                guard length >= (greeting ? 0 : 1), length <= rest.count else {
                    fail(sock, .badResponse, "the framing of \(proto.name) reply \(nextReceive) said "
                         + "\(length) bytes of the \(rest.count) received")
                    break framing
                }
                if length > replyMax {
                    fail(sock, .replyTooLarge, "\(proto.name) reply \(nextReceive) is \(length) bytes "
                         + "(--reply-max \(replyMax))")
                    break framing
                }
                used += length
                if greeting {
                    if case .errorReply(_, let why) = framing {
                        fail(sock, .errorReply, "the greeting was refused: \(why)")
                        break framing
                    }
                    becomeOpen(sock)
                    continue
                }
                if now == 0 { now = Deadline.now().uptimeNanoseconds }
                record(framing, UnsafeRawBufferPointer(rebasing: rest[..<length]), now: now)
                completed += 1
            }
        }
        guard state == .open, !closing, !worker.stopping, completed > 0 else { return used }
        if openLoop {
            if worker.nextPaceAt <= now { worker.pace(now: now) }
        } else {
            for _ in 0..<completed { queueRequest(at: now) }
            flush(sock)
        }
        return used
    }

    /// Counts `reply`, the reply to the oldest request, and checks it.
    private func record(_ framing: ReplyFraming, _ reply: UnsafeRawBufferPointer, now: UInt64) {
        let sequence = nextReceive
        nextReceive &+= 1
        if openLoop {
            worker.recordPacedReply(latency: now &- times[sequence], service: now &- sentTimes[sequence],
                                    bytes: reply.count, now: now)
        } else {
            worker.recordReply(latency: now &- times[sequence], bytes: reply.count, now: now)
        }
        if case .errorReply(_, let why) = framing {
            worker.recordError(.errorReply, "\(proto.name) reply \(sequence): \(why)")
        } else if inspectsBody && !checks.passes(body: reply, rotation: sequence) {
            worker.recordError(.check, checks.failure(bodyBytes: reply.count, path: "request \(sequence)",
                                                      rotation: sequence))
        }
    }

    private func fail(_ sock: GCDAsyncSocket, _ kind: ErrorKind, _ message: String) {
        closing = true
        worker.recordError(kind, message)
        sock.disconnect()
    }
}
