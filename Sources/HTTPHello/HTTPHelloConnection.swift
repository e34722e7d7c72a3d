import Dispatch
import FoundationEssentials
import LoopSocket

/// One connection of http-hello: parses the requests as they arrive (several per read when pipelined),
/// reads past their bodies, and queues one response per request, in order. Callbacks run on the
/// connection's loop, one at a time, so its state needs no lock.
final class HTTPHelloConnection: GCDAsyncSocketDelegate, @unchecked Sendable {
    // An idle connection is this object, its socket and the kernel's: the configuration and the response
    // bytes are the server's, shared by reference, and a body's state is boxed, allocated only while a
    // request's body is read past (a 64-byte object instead of about 400).
    /// The server: its configuration and its response bytes.
    let server: HTTPHelloServer
    // `@exclusivity(unchecked)`: touched only in this connection's callbacks, on its loop, one at a time;
    // the dynamic checks cost about 800 instructions per request (callgrind).
    /// Bytes of an incomplete head (nothing else is kept between reads).
    @exclusivity(unchecked) private var buffer: [UInt8] = []
    /// The body being read past, and the request it belongs to (answered once it ends).
    @exclusivity(unchecked) private var body: BodyState?
    @exclusivity(unchecked) private var phase = Phase.serving
    /// The connection keeps itself alive until its socket disconnects (the socket holds its delegate
    /// weakly): cheaper than the socket's `userData`, which would allocate the socket's box of rare state.
    @exclusivity(unchecked) private var life: HTTPHelloConnection?

    /// A request's body being read past.
    final class BodyState {
        var decoder: HTTPBodyDecoder
        let request: HTTPRequestHead

        init(_ request: HTTPRequestHead) {
            self.decoder = HTTPBodyDecoder(request.body)
            self.request = request
        }
    }

    enum Phase {
        /// Between requests, or reading past a body.
        case serving
        /// Part of a request head, or empty lines before one, has arrived: the rest must arrive by `deadline`
        /// (``HTTPHelloServer/Configuration/headTimeout``), and `scan` says how far the buffered part was
        /// searched.
        case readingHead(deadline: DispatchTime, scan: HTTPHeadParser.Scan)
        /// The last response is queued and the socket closes after writing it.
        case closing
        /// A refusal is queued and the write side shut after it; what the client still sends is dropped
        /// until `deadline` or its end of stream.
        case lingering(deadline: DispatchTime)

        /// Whether requests are still read.
        var reads: Bool {
            switch self {
            case .serving, .readingHead: true
            case .closing, .lingering: false
            }
        }
    }

    init(server: HTTPHelloServer) {
        self.server = server
        life = self
    }

    /// The bytes held between reads (what tests look at to see that memory stays bounded); read it on the
    /// connection's loop.
    var bufferedByteCount: Int { buffer.count }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: (any Error)?) {
        life = nil
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        switch phase {
        case .serving, .readingHead:
            receive(data, on: sock)
        case .closing:
            return
        case .lingering:
            break
        }
        switch phase {
        case .serving:
            sock.readData(withTimeout: server.configuration.idleTimeout, tag: 0)
        case .readingHead(let deadline, _):
            let left = Self.seconds(until: deadline)
            if left <= 0 { return headTimedOut(on: sock) }
            sock.readData(withTimeout: min(server.configuration.idleTimeout, left), tag: 0)
        case .closing:
            return
        case .lingering(let deadline):
            let left = Self.seconds(until: deadline)
            if left <= 0 { sock.disconnect() } else { sock.readData(withTimeout: left, tag: 0) }
        }
    }

    /// A read timed out: the idle timeout, the head deadline, or the end of a linger. Part of a head
    /// buffered gets 408 (and the linger that follows a refusal); anything else closes at once, as an idle
    /// connection does.
    func socket(_ sock: GCDAsyncSocket, shouldTimeoutReadWithTag tag: Int, elapsed: TimeInterval, bytesDone length: UInt) -> TimeInterval {
        guard case .readingHead = phase, !buffer.isEmpty else { return 0 }
        refuse(.requestTimeout, on: sock)
        return server.configuration.lingerTimeout
    }

    /// The head deadline passed while bytes kept arriving.
    private func headTimedOut(on sock: GCDAsyncSocket) {
        guard !buffer.isEmpty else { return sock.disconnect() }
        refuse(.requestTimeout, on: sock)
        sock.readData(withTimeout: server.configuration.lingerTimeout, tag: 0)
    }

    private static func seconds(until deadline: DispatchTime) -> Double {
        Double(Int64(bitPattern: deadline.uptimeNanoseconds &- DispatchTime.now().uptimeNanoseconds)) / 1e9
    }

    /// Handles the bytes of one read: in place when nothing is buffered, else after the buffered head.
    private func receive(_ data: Data, on sock: GCDAsyncSocket) {
        if buffer.isEmpty {
            let used = data.withUnsafeBytes { handle($0.assumingMemoryBound(to: UInt8.self), on: sock) }
            if phase.reads, used < data.count {
                buffer.append(contentsOf: data[(data.startIndex + used)...])
            }
        } else {
            buffer.append(contentsOf: data)
            let used = buffer.withUnsafeBufferPointer { handle($0, on: sock) }
            if phase.reads { buffer.removeFirst(used) } else { buffer = [] }
        }
    }

    /// Answers every complete request at the start of `bytes`; returns the bytes used (the rest is the
    /// start of a head still incomplete). Empty lines before a request line are used up here, not buffered:
    /// a peer that sends nothing else holds no memory, and the head deadline still runs from the first one.
    /// A head begun by an earlier read is taken out of the phase first and put back if this read leaves one,
    /// so that each request costs a register test, not a look at the phase.
    private func handle(_ bytes: UnsafeBufferPointer<UInt8>, on sock: GCDAsyncSocket) -> Int {
        // The deadline of the head in progress (0: none yet), and how far its part that starts `bytes` was
        // searched.
        var deadline: UInt64 = 0
        var scan = HTTPHeadParser.Scan()
        if case .readingHead(let begun, let resumed) = phase {
            deadline = begun.uptimeNanoseconds
            scan = resumed
            phase = .serving
        }
        var offset = 0
        var serving = true
        while offset < bytes.count && serving {
            let rest = UnsafeBufferPointer(rebasing: bytes[offset...])
            if let current = body {
                let (used, outcome) = current.decoder.consume(rest)
                offset += used
                switch outcome {
                case .needMore:
                    break
                case .done:
                    body = nil
                    serving = respond(to: current.request, on: sock)
                case .failed:
                    body = nil
                    refuse(.badRequest, on: sock)
                    serving = false
                }
                continue
            }
            if rest[0] == HTTPHeadParser.lf || rest[0] == HTTPHeadParser.cr {
                let skipped = HTTPHeadParser.skipEmptyLines(rest)
                if skipped > 0 {
                    offset += skipped
                    if deadline == 0 { deadline = headDeadline() }
                    scan = HTTPHeadParser.Scan()
                    continue
                }
            }
            switch HTTPHeadParser.parse(
                rest, maxLength: server.configuration.maxHeadLength, maxFields: server.configuration.maxHeaderFields,
                resuming: &scan
            ) {
            case .incomplete:
                phase = .readingHead(
                    deadline: DispatchTime(uptimeNanoseconds: deadline == 0 ? headDeadline() : deadline), scan: scan)
                return offset
            case .failed(let failure):
                refuse(failure, on: sock)
                return offset
            case .complete(let request, let length):
                offset += length
                deadline = 0
                if request.body == .none {
                    serving = respond(to: request, on: sock)
                } else {
                    if request.expectsContinue { sock.write(server.responses.continue, withTimeout: 10, tag: 0) }
                    body = BodyState(request)
                }
            }
        }
        // Only empty lines were left: the head they begin has its deadline running.
        if deadline != 0, serving {
            phase = .readingHead(deadline: DispatchTime(uptimeNanoseconds: deadline), scan: HTTPHeadParser.Scan())
        }
        return offset
    }

    /// When a head that begins now must have ended, in `DispatchTime`'s nanoseconds.
    private func headDeadline() -> UInt64 {
        (DispatchTime.now() + server.configuration.headTimeout).uptimeNanoseconds
    }

    /// Queues the response; false when the connection closes after it.
    private func respond(to request: HTTPRequestHead, on sock: GCDAsyncSocket) -> Bool {
        sock.write(server.responses.to(request), withTimeout: 10, tag: 0)
        if !request.keepAlive {
            phase = .closing
            sock.disconnectAfterWriting()
        }
        return request.keepAlive
    }

    /// Sends the refusal, then half-closes and lingers (see ``HTTPHelloServer/Configuration/lingerTimeout``).
    private func refuse(_ failure: HTTPFailure, on sock: GCDAsyncSocket) {
        server.refusals.add(failure)
        sock.write(HTTPResponses.failure(failure), withTimeout: 10, tag: 0)
        sock.closeWriteStream()
        phase = .lingering(deadline: .now() + server.configuration.lingerTimeout)
        buffer = []
    }
}
