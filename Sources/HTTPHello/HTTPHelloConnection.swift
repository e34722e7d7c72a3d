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
        case serving
        /// The last response is queued and the socket closes after writing it.
        case closing
        /// A refusal is queued and the write side shut after it; what the client still sends is dropped
        /// until `deadline` or its end of stream.
        case lingering(deadline: DispatchTime)
    }

    init(server: HTTPHelloServer) {
        self.server = server
        life = self
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: (any Error)?) {
        life = nil
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        switch phase {
        case .serving:
            receive(data, on: sock)
        case .closing:
            return
        case .lingering:
            break
        }
        switch phase {
        case .serving:
            sock.readData(withTimeout: server.configuration.idleTimeout, tag: 0)
        case .closing:
            return
        case .lingering(let deadline):
            let left = Double(Int64(bitPattern: deadline.uptimeNanoseconds &- DispatchTime.now().uptimeNanoseconds)) / 1e9
            if left <= 0 { sock.disconnect() } else { sock.readData(withTimeout: left, tag: 0) }
        }
    }

    /// Handles the bytes of one read: in place when nothing is buffered, else after the buffered head.
    private func receive(_ data: Data, on sock: GCDAsyncSocket) {
        if buffer.isEmpty {
            let used = data.withUnsafeBytes { handle($0.assumingMemoryBound(to: UInt8.self), on: sock) }
            if case .serving = phase, used < data.count {
                buffer.append(contentsOf: data[(data.startIndex + used)...])
            }
        } else {
            buffer.append(contentsOf: data)
            let used = buffer.withUnsafeBufferPointer { handle($0, on: sock) }
            if case .serving = phase { buffer.removeFirst(used) } else { buffer = [] }
        }
    }

    /// Answers every complete request at the start of `bytes`; returns the bytes used (the rest is the
    /// start of a head still incomplete).
    private func handle(_ bytes: UnsafeBufferPointer<UInt8>, on sock: GCDAsyncSocket) -> Int {
        var offset = 0
        while offset < bytes.count, case .serving = phase {
            let rest = UnsafeBufferPointer(rebasing: bytes[offset...])
            if let current = body {
                let (used, outcome) = current.decoder.consume(rest)
                offset += used
                switch outcome {
                case .needMore:
                    break
                case .done:
                    body = nil
                    respond(to: current.request, on: sock)
                case .failed:
                    body = nil
                    refuse(.badRequest, on: sock)
                }
                continue
            }
            switch HTTPHeadParser.parse(rest, maxLength: server.configuration.maxHeadLength) {
            case .incomplete:
                return offset
            case .failed(let failure):
                refuse(failure, on: sock)
                return offset
            case .complete(let request, let length):
                offset += length
                if request.body == .none {
                    respond(to: request, on: sock)
                } else {
                    if request.expectsContinue { sock.write(server.responses.continue, withTimeout: 10, tag: 0) }
                    body = BodyState(request)
                }
            }
        }
        return offset
    }

    private func respond(to request: HTTPRequestHead, on sock: GCDAsyncSocket) {
        sock.write(server.responses.to(request), withTimeout: 10, tag: 0)
        if !request.keepAlive {
            phase = .closing
            sock.disconnectAfterWriting()
        }
    }

    /// Sends the refusal, then half-closes and lingers (see ``HTTPHelloServer/Configuration/lingerTimeout``).
    private func refuse(_ failure: HTTPFailure, on sock: GCDAsyncSocket) {
        sock.write(HTTPResponses.failure(failure), withTimeout: 10, tag: 0)
        sock.closeWriteStream()
        phase = .lingering(deadline: .now() + server.configuration.lingerTimeout)
        buffer = []
    }
}
