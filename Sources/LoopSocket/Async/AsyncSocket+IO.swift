import EpollLoop
import FoundationEssentials

/// Reading and writing.
extension AsyncSocket {
    /// Reads what is available, at most `maxLength` bytes; `nil` once the peer has closed its side and
    /// everything it sent has been read.
    public func read(maxLength: Int = 65536) async throws -> Data? {
        do {
            return try await read(.available, maxLength: max(1, maxLength))
        } catch GCDAsyncSocketError.closedError {
            return nil
        }
    }

    /// Reads exactly `length` bytes.
    /// - Throws: ``GCDAsyncSocketError/Code/closedError`` if the stream ends first.
    public func read(toLength length: Int) async throws -> Data {
        guard length > 0 else { return Data() }
        return try await read(.length(length), maxLength: 0)
    }

    /// Reads up to and including `separator`.
    /// - Throws: ``GCDAsyncSocketError/Code/readMaxedOutError`` if `maxLength` bytes (when not 0) arrive without
    ///   the separator (the connection is closed, as with GCDAsyncSocket), `closedError` if the stream ends first.
    public func read(upTo separator: Data, maxLength: Int = 0) async throws -> Data {
        guard !separator.isEmpty, maxLength == 0 || maxLength >= separator.count else {
            throw GCDAsyncSocketError(.badParamError, "The separator must not be empty nor longer than maxLength")
        }
        return try await read(.separator(separator), maxLength: maxLength)
    }

    /// Every chunk the peer sends, until it closes its side.
    ///
    /// ```swift
    /// for try await chunk in connection.chunks { ... }
    /// ```
    public var chunks: Chunks { Chunks(socket: self) }

    /// Queues `data` for writing and returns; suspends first while more than the high water mark
    /// (``SocketOptions/writeHighWaterMark``) is queued, until the queue falls below the low water mark.
    /// - Throws: the error that closed the connection or failed an earlier write.
    public func write(_ data: Data) async throws {
        guard !data.isEmpty else { return }
        if eventLoop.inEventLoop {
            try enqueueWriteOnLoop(data)
            if handler.isWritable { return }
        } else {
            let writable = try await onLoopThrowing { [self] () throws -> Bool in
                try enqueueWriteOnLoop(data)
                return handler.isWritable
            }
            if writable { return }
        }
        try await waitUntilWritable()
    }

    private func enqueueWriteOnLoop(_ data: Data) throws {
        if let failure = handler.failure { throw failure }
        socket.enqueueWrite(data, timeout: -1, tag: 0)
    }

    private func waitUntilWritable() async throws {
        let handler = self.handler
        let idBox = IDBox()
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                let box = UncheckedSendable(continuation)
                let queued = socket.onLoop {
                    if let failure = handler.failure { return box.value.resume(throwing: failure) }
                    if handler.isWritable { return box.value.resume() }
                    if idBox.cancelled { return box.value.resume(throwing: CancellationError()) }
                    let id = handler.nextWaiterID
                    handler.nextWaiterID += 1
                    idBox.id = id
                    handler.writableWaiters.append((id, box.value))
                }
                if !queued { continuation.resume(throwing: GCDAsyncSocketError.loopShutDown) }
            }
        } onCancel: {
            socket.onLoop {
                idBox.cancelled = true
                if let id = idBox.id { handler.cancelWritableWaiter(id) }
            }
        }
    }

    /// One read: from the buffered bytes without suspending when they suffice (on the loop), else queued
    /// with a continuation that the read operation resumes.
    func read(_ kind: ReadOp.Kind, maxLength: Int) async throws -> Data {
        try Task.checkCancellation()
        let socket = self.socket
        if eventLoop.inEventLoop, let data = try socket.readImmediately(kind, maxLength: maxLength) {
            return data
        }
        let waiterBox = WaiterBox()
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Data, any Error>) in
                let waiter = ReadWaiter(continuation)
                let op = ReadOp(kind: kind, maxLength: maxLength, tag: 0, timeout: -1, id: 0, waiter: waiter)
                let box = UncheckedSendable(op)
                let queued = socket.onLoop {
                    // On the loop, in whichever order this and the cancellation handler's task arrive.
                    waiterBox.waiter = waiter
                    if waiterBox.cancelled { waiter.cancelled = true }
                    socket.enqueueAsyncRead(box.value)
                }
                if !queued { waiter.resume(.failure(GCDAsyncSocketError.loopShutDown)) }
            }
        } onCancel: {
            socket.onLoop {
                waiterBox.cancelled = true
                if let waiter = waiterBox.waiter { socket.cancelRead(waiter) }
            }
        }
    }

    /// The chunks of a connection, as an `AsyncSequence`.
    public struct Chunks: AsyncSequence, Sendable {
        public typealias Element = Data
        let socket: AsyncSocket

        /// Reads the next chunk; `nil` at end of stream.
        public struct AsyncIterator: AsyncIteratorProtocol {
            let socket: AsyncSocket
            /// The next chunk, or `nil` once the peer has closed its side.
            public mutating func next() async throws -> Data? {
                try await socket.read(maxLength: 65536)
            }
        }

        /// An iterator reading chunks of up to 64 KiB.
        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(socket: socket) }
    }
}

/// Holds a read's waiter and whether cancellation came first; loop-confined, so the read's queueing task and
/// the cancellation handler's task see one order whichever thread each started on.
final class WaiterBox: @unchecked Sendable {
    var waiter: ReadWaiter?
    var cancelled = false
}

/// Holds a writability waiter's id and whether cancellation came first; loop-confined.
final class IDBox: @unchecked Sendable {
    var id: UInt64?
    var cancelled = false
}

extension GCDAsyncSocket {
    /// Completes a read from the prebuffer at once when possible (no read queued ahead of it, the socket
    /// connected). Returns nil when the read must wait. Loop only.
    func readImmediately(_ kind: ReadOp.Kind, maxLength: Int) throws -> Data? {
        guard phase == .connected, reads.isEmpty, pendingCount > 0 else { return nil }
        var op = ReadOp(kind: kind, maxLength: maxLength, tag: 0, timeout: -1, id: 0)
        let outcome = pending.withUnsafeBytes { all in op.feed(UnsafeRawBufferPointer(rebasing: all[pendingStart...])) }
        switch outcome {
        case .complete(let used, let data):
            pendingStart += used
            if pendingStart == pending.count {
                pending = []
                pendingStart = 0
            }
            return data
        case .needMore, .maxedOut:
            return nil  // Nothing consumed: `op` was a scratch copy; the queued read will take the bytes.
        }
    }

    /// Queues an `async` read (or resumes it at once if it was cancelled, or the socket is not connected).
    func enqueueAsyncRead(_ op: ReadOp) {
        guard let waiter = op.waiter else { return }
        if waiter.cancelled { return waiter.resume(.failure(CancellationError())) }
        guard phase != .idle, !flags.contains(.noNewIO) else {
            return waiter.resume(.failure(GCDAsyncSocketError(.closedError, "The socket is closed")))
        }
        enqueueRead(op)
    }
}
