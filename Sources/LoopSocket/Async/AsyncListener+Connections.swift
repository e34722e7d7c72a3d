import EpollLoop

extension AsyncListener {
    /// The connections a listener accepts, in order: an `AsyncSequence` for one consumer.
    ///
    /// Ends (`nil`) when the listener closes, or throws the error that closed it. When the consuming task is
    /// cancelled, the sequence ends and the listener closes, so the kernel stops accepting connections nobody
    /// will serve. Connections accepted but not taken yet wait here; they are closed if the listener is
    /// released before they are taken.
    public struct Connections: AsyncSequence, Sendable {
        /// An accepted connection.
        public typealias Element = AsyncSocket
        /// The error that closed the listener.
        public typealias Failure = any Error

        let queue: AcceptQueue

        /// Takes connections from the listener.
        public struct AsyncIterator: AsyncIteratorProtocol {
            let queue: AcceptQueue

            /// The next accepted connection; `nil` once the listener has closed (or the task was cancelled).
            nonisolated(nonsending) public mutating func next() async throws -> AsyncSocket? {
                try await queue.next()
            }
        }

        /// An iterator over the accepted connections.
        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(queue: queue) }
    }
}

/// Where a listener's accepted connections wait for their consumer: a queue and at most one waiting
/// continuation under one lock, yielded to from the listener's loop (or, for TLS, the connection's loop once
/// its handshake is done) and taken from by the consuming task.
///
/// It replaces an `AsyncThrowingStream<AsyncSocket, any Error>`, whose generic code, unspecialised in the
/// concurrency library, looked up about twenty generic metadata entries at run time for every connection
/// (callgrind, connect churn of `async-echo-server`); nothing here is generic.
final class AcceptQueue: @unchecked Sendable {
    // @unchecked: every field is reached under `state`'s lock.
    private struct State {
        var waiting: [AsyncSocket] = []
        var head = 0
        var consumer: UnsafeContinuation<AsyncSocket?, any Error>?
        /// Set once the sequence has ended: nil error for a normal end or a cancellation.
        var ended = false
        var failure: (any Error)?

        /// Takes the oldest queued connection, if any.
        mutating func takeQueued() -> AsyncSocket? {
            guard head < waiting.count else { return nil }
            let connection = waiting[head]
            head += 1
            if head == waiting.count {
                waiting.removeAll(keepingCapacity: true)
                head = 0
            }
            return connection
        }
    }

    private let state = Locked(State())
    /// Stops the listener (the consumer went away).
    private let onCancel: @Sendable () -> Void

    init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = onCancel
    }

    /// Hands `connection` to the consumer, or queues it. After the end it is dropped (and so closed).
    func yield(_ connection: AsyncSocket) {
        let consumer: UnsafeContinuation<AsyncSocket?, any Error>? = state.withLock { state in
            if state.ended { return nil }
            if let consumer = state.consumer {
                state.consumer = nil
                return consumer
            }
            state.waiting.append(connection)
            return nil
        }
        consumer?.handOff(returning: connection)
    }

    /// Ends the sequence: the consumer gets the queued connections, then `nil`, or `error` once.
    func finish(throwing error: (any Error)? = nil) {
        let consumer: UnsafeContinuation<AsyncSocket?, any Error>? = state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            state.failure = error
            guard state.head == state.waiting.count, let consumer = state.consumer else { return nil }
            state.consumer = nil
            state.failure = nil
            return consumer
        }
        guard let consumer else { return }
        if let error { consumer.handOff(throwing: error) } else { consumer.handOff(returning: nil) }
    }

    /// Whether a consumer is waiting in `next` (for tests).
    var hasWaitingConsumer: Bool { state.withLock { $0.consumer != nil } }

    /// The next connection, waiting for one if none is queued.
    ///
    /// One already queued (a burst of accepts) is taken at once, without the cancellation record and the
    /// continuation that waiting needs: each costs the task's status-record lock, twice.
    nonisolated(nonsending) func next() async throws -> AsyncSocket? {
        if !Task.isCancelled, let connection = state.withLock({ $0.takeQueued() }) { return connection }
        defer { HandOff.received() }
        return try await withCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<AsyncSocket?, any Error>) in
                let ready: Result<AsyncSocket?, any Error>? = state.withLock { state in
                    if let connection = state.takeQueued() { return .success(connection) }
                    if state.ended {
                        defer { state.failure = nil }
                        return state.failure.map { .failure($0) } ?? .success(nil)
                    }
                    guard state.consumer == nil else {
                        // Two consumers at once: the second is refused rather than left waiting forever.
                        return .failure(GCDAsyncSocketError(
                            .badConfigError, "AsyncListener.connections has one consumer: next() was called while another call waited"))
                    }
                    state.consumer = continuation
                    return nil
                }
                if let ready { continuation.handOff(with: ready) }
            }
        } onCancel: {
            cancel()
        }
    }

    /// The consuming task was cancelled: the sequence ends (a waiting `next` returns nil), the connections
    /// still queued are closed, and the listener stops.
    private func cancel() {
        let (consumer, dropped): (UnsafeContinuation<AsyncSocket?, any Error>?, [AsyncSocket]) = state.withLock { state in
            state.ended = true
            state.failure = nil
            let dropped = Array(state.waiting[state.head...])
            state.waiting = []
            state.head = 0
            defer { state.consumer = nil }
            return (state.consumer, dropped)
        }
        consumer?.handOff(returning: nil)
        for connection in dropped { connection.socket.disconnect() }
        onCancel()
    }
}
