import EpollLoop
import FoundationEssentials
import Synchronization

/// The metrics server's HTTP side, on the listener's loop: admits connections up to the cap, reads one
/// request head at a time within its deadline and size, answers it within the response budget, and reads
/// the next only once the answer has been handed to the kernel. Every callback runs on that one loop; the
/// state sits behind a mutex only so that ``LoopMetricsServer`` can read the counters from any thread (it is
/// never held across a call into a socket or the page closure, which may call back).
final class MetricsResponder: GCDAsyncSocketDelegate, Sendable {
    /// The reads and writes a connection queues, told apart in their callbacks.
    private enum Tag {
        /// The request head, up to its blank line.
        static let head = 1
        /// The first byte of a kept-alive connection's next request: until it comes, the idle timeout runs;
        /// from then on, the head's.
        static let firstByte = 2
        /// A response.
        static let response = 3
    }

    /// Where one connection is in its request-response cycle.
    private enum Phase {
        /// Reading a request head (within the head timeout); `first` is its first byte, read by itself.
        case readingHead(first: UInt8?)
        /// Waiting for the first byte of the next request (within the idle timeout).
        case waitingForRequest
        /// A request waits for the response budget; nothing more is read meanwhile.
        case waitingForBudget(MetricsRequest)
        /// A response is being written (within the send timeout); the next request is read after it.
        case sending
        /// The last response is being written; the connection closes after it.
        case closing
    }

    private struct Connection {
        let socket: GCDAsyncSocket
        var phase: Phase = .readingHead(first: nil)
        var answered = 0
    }

    private struct State {
        var connections: [ObjectIdentifier: Connection] = [:]
        var counters = MetricsServerCounters()
        var budget: ResponseBudget
        /// Connections whose request waits for the budget, oldest first.
        var waiting: [ObjectIdentifier] = []
        /// A timer will hand out the budget to ``waiting``.
        var wakeupArmed = false
        var cache = PageCache()
        /// The server closed: new connections are refused.
        var closed = false
    }

    private static let headEnd = Data("\r\n\r\n".utf8)
    private let loop: EventLoop
    private let configuration: LoopMetricsServer.Configuration
    private let page: @Sendable () -> String
    private let state: Mutex<State>

    /// A responder on `loop` serving `page` within `configuration`'s limits (already clamped).
    init(loop: EventLoop, configuration: LoopMetricsServer.Configuration, page: @escaping @Sendable () -> String) {
        self.loop = loop
        self.configuration = configuration
        self.page = page
        state = Mutex(State(budget: ResponseBudget(perSecond: configuration.responsesPerSecond, now: .now)))
    }

    /// The counters now; any thread.
    var counters: MetricsServerCounters {
        state.withLock { $0.counters }
    }

    // MARK: Connections

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        let admitted = state.withLock { state -> Bool in
            guard !state.closed, state.connections.count < configuration.maxConnections else {
                state.counters.connectionsRefused += 1
                return false
            }
            state.connections[ObjectIdentifier(newSocket)] = Connection(socket: newSocket)
            state.counters.connectionsOpen = state.connections.count
            return true
        }
        guard admitted else {
            // Closed before it ever starts: no registration with the loop, no read, no write, so that a flood
            // of connections over the cap costs the loop as little as accepting can.
            newSocket.disconnect()
            return
        }
        readHead(sock: newSocket, after: 0)
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        let id = ObjectIdentifier(sock)
        state.withLock { state in
            guard let connection = state.connections.removeValue(forKey: id) else { return }
            state.counters.connectionsOpen = state.connections.count
            state.waiting.removeAll { $0 == id }
            switch ((err as? GCDAsyncSocketError)?.code, connection.phase) {
            case (.readTimeoutError?, .waitingForRequest): state.counters.idleTimeouts += 1
            case (.readTimeoutError?, _): state.counters.headTimeouts += 1
            case (.writeTimeoutError?, _): state.counters.sendTimeouts += 1
            case (.readMaxedOutError?, _): state.counters.tooLarge += 1
            default: break
            }
        }
    }

    /// Refuses new connections and closes the open ones; any thread.
    func shutDown() {
        let close: @Sendable () -> Void = { [self] in
            let sockets = state.withLock { state in
                state.closed = true
                return state.connections.values.map(\.socket)
            }
            for socket in sockets { socket.disconnect() }
        }
        if loop.inEventLoop { close() } else { try? loop.execute(close) }
    }

    // MARK: Requests

    /// Reads a request head, `already` bytes of which were read (its first byte, after an idle wait).
    private func readHead(sock: GCDAsyncSocket, after already: Int) {
        sock.readData(to: Self.headEnd, withTimeout: configuration.requestHeadTimeout.metricsServerSeconds,
                      maxLength: UInt(configuration.maxRequestHeadBytes - already), tag: Tag.head)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        let id = ObjectIdentifier(sock)
        if tag == Tag.firstByte {
            state.withLock { $0.connections[id]?.phase = .readingHead(first: data.first) }
            readHead(sock: sock, after: 1)
            return
        }
        let first = state.withLock { state -> UInt8? in
            guard case .readingHead(let first)? = state.connections[id]?.phase else { return nil }
            return first
        }
        var head = first.map { Data([$0]) } ?? Data()
        head.append(data)
        let request = head.withUnsafeBytes(MetricsRequest.parse)
        enum Next { case answer, wait(armTimer: Duration?), gone }
        let now = ContinuousClock.now
        let next = state.withLock { state -> Next in
            guard state.connections[id] != nil else { return .gone }
            if state.waiting.isEmpty && state.budget.take(now: now) {
                state.connections[id]!.phase = .sending
                return .answer
            }
            state.connections[id]!.phase = .waitingForBudget(request)
            state.waiting.append(id)
            state.counters.delayed += 1
            guard !state.wakeupArmed else { return .wait(armTimer: nil) }
            state.wakeupArmed = true
            return .wait(armTimer: state.budget.wait(now: now))
        }
        switch next {
        case .answer: answer(request, on: sock)
        case .wait(let delay?): scheduleBudget(after: delay)
        case .wait(nil), .gone: break
        }
    }

    func socket(_ sock: GCDAsyncSocket, didWriteDataWithTag tag: Int) {
        guard tag == Tag.response else { return }
        let id = ObjectIdentifier(sock)
        let readNext = state.withLock { state -> Bool in
            guard case .sending? = state.connections[id]?.phase else { return false }
            state.connections[id]!.phase = .waitingForRequest
            return true
        }
        if readNext {
            sock.readData(toLength: 1, withTimeout: configuration.idleTimeout.metricsServerSeconds, tag: Tag.firstByte)
        }
    }

    /// Writes the response to `request`, closing the connection after it when the request asks for that or
    /// the connection has reached its request limit.
    private func answer(_ request: MetricsRequest, on sock: GCDAsyncSocket) {
        let id = ObjectIdentifier(sock)
        let closing = state.withLock { state -> Bool in
            state.counters.count(request)
            guard var connection = state.connections[id] else { return true }
            connection.answered += 1
            let closing = !request.keepAlive || connection.answered >= configuration.maxRequestsPerConnection
            if closing { connection.phase = .closing }
            state.connections[id] = connection
            return closing
        }
        let response = request.response(closing: closing) { pageWithCounters() }
        sock.write(response, withTimeout: configuration.sendTimeout.metricsServerSeconds, tag: Tag.response)
        if closing { sock.disconnectAfterWriting() }
    }

    /// The page (rendered, or the last rendering again: ``PageCache``) with the endpoint's own counters.
    private func pageWithCounters() -> Data {
        let now = ContinuousClock.now
        let turn = loop.metrics.iterations
        var body: Data
        if let cached = state.withLock({ $0.cache.page(now: now, turn: turn, reuseInterval: configuration.pageReuseInterval) }) {
            body = cached
        } else {
            body = Data(page().utf8)
            let rendered = body
            state.withLock { state in
                state.cache.store(rendered, now: now, turn: turn)
                state.counters.pagesRendered += 1
            }
        }
        body.append(Data(counters.prometheusText.utf8))
        return body
    }

    // MARK: The response budget

    /// Hands the budget out to the connections waiting for it after `delay`.
    private func scheduleBudget(after delay: Duration) {
        let armed = (try? loop.schedule(after: delay) { [weak self] in self?.grantBudget() }) != nil
        if !armed { state.withLock { $0.wakeupArmed = false } }
    }

    /// Answers the waiting requests, oldest first, as far as the budget goes, and waits again for the rest.
    private func grantBudget() {
        let now = ContinuousClock.now
        var granted: [(GCDAsyncSocket, MetricsRequest)] = []
        let again = state.withLock { state -> Duration? in
            state.wakeupArmed = false
            while let id = state.waiting.first {
                guard let connection = state.connections[id], case .waitingForBudget(let request) = connection.phase else {
                    state.waiting.removeFirst()
                    continue
                }
                guard state.budget.take(now: now) else { break }
                state.waiting.removeFirst()
                state.connections[id]!.phase = .sending
                granted.append((connection.socket, request))
            }
            guard !state.waiting.isEmpty else { return nil }
            state.wakeupArmed = true
            return state.budget.wait(now: now)
        }
        for (socket, request) in granted { answer(request, on: socket) }
        if let again { scheduleBudget(after: again) }
    }
}
