import EpollLoop
import FoundationEssentials

/// Reading and writing.
extension AsyncSocket {
    /// Reads what is available, at most `maxLength` bytes; `nil` once the peer has closed its side and
    /// everything it sent has been read.
    nonisolated(nonsending) public func read(maxLength: Int = 65536) async throws -> Data? {
        do {
            return try await read(.available, maxLength: max(1, maxLength))
        } catch {
            if Self.isEndOfStream(error) { return nil }
            throw error
        }
    }

    /// Whether a read's error is the end of the stream. Out of line, so the pattern match's temporaries stay
    /// on the thread's stack instead of in `read`'s async frame (which every idle connection's task holds).
    @inline(never) static func isEndOfStream(_ error: any Error) -> Bool {
        if case GCDAsyncSocketError.closedError = error { return true }
        return false
    }

    /// Reads exactly `length` bytes.
    /// - Throws: ``GCDAsyncSocketError/Code/closedError`` if the stream ends first.
    nonisolated(nonsending) public func read(toLength length: Int) async throws -> Data {
        guard length > 0 else { return Data() }
        return try await read(.length(length), maxLength: 0)
    }

    /// Reads up to and including `separator`.
    /// - Throws: ``GCDAsyncSocketError/Code/readMaxedOutError`` if `maxLength` bytes (when not 0) arrive without
    ///   the separator (the connection is closed, as with GCDAsyncSocket), `closedError` if the stream ends first.
    nonisolated(nonsending) public func read(upTo separator: Data, maxLength: Int = 0) async throws -> Data {
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

    /// Hands `data` to the kernel, or queues what it does not take, and returns. If that leaves more than
    /// the high water mark (``SocketOptions/writeHighWaterMark``) queued, it suspends before returning until
    /// the queue falls below the low water mark (backpressure).
    /// - Throws: the error that closed the connection or failed an earlier write, or the failure of this
    ///   write's own send when it was tried within the call. Bytes queued when the connection later fails are
    ///   reported by the next operation.
    @inlinable nonisolated(nonsending) public func write(_ data: Data) async throws {
        // Inlined into the caller so that the common case, a task on the socket's loop with room in the
        // write queue, runs without an async frame of its own: the data is queued and sent within the call.
        guard !data.isEmpty else { return }
        if eventLoop.inEventLoop {
            if try writeOnLoop(data) { return }
            try await waitUntilWritable()
        } else {
            try await writeFromOtherThread(data)
        }
    }

    /// Sends or queues `data` (loop only); true while the queue is below its high water mark. Throws if the
    /// connection had already failed, or failed on this write's own send.
    @usableFromInline func writeOnLoop(_ data: Data) throws -> Bool {
        if let failure = handler.failure { throw failure }
        socket.sendOrEnqueue(data)
        if let failure = handler.failure { throw failure }
        return handler.isWritable
    }

    /// `write` from a task off the socket's loop: queued through the loop, then waits like the loop path.
    @usableFromInline nonisolated(nonsending) func writeFromOtherThread(_ data: Data) async throws {
        let writable = try await onLoopThrowing { [self] () throws -> Bool in try writeOnLoop(data) }
        if !writable { try await waitUntilWritable() }
    }

    @usableFromInline nonisolated(nonsending) func waitUntilWritable() async throws {
        let handler = self.handler
        let idBox = PendingCancellation<UInt32>()
        defer { HandOff.received() }
        try await withCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                let box = UncheckedSendable(continuation)
                let queued = socket.onLoop {
                    if let failure = handler.failure { return box.value.handOff(throwing: failure) }
                    if handler.isWritable { return box.value.handOff() }
                    if idBox.cancelled { return box.value.handOff(throwing: CancellationError()) }
                    idBox.id = handler.addWritableWaiter(box.value)
                }
                if !queued { continuation.handOff(throwing: GCDAsyncSocketError.loopShutDown) }
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
    @inline(__always) nonisolated(nonsending) func read(_ kind: ReadOp.Kind, maxLength: Int) async throws -> Data {
        // The running task, looked up once: whether it is cancelled (what `Task.checkCancellation()` asks,
        // looking it up again), and whether it is the read scope's.
        let task = Self.currentTask()
        if let task, swiftTaskIsCancelled(task) { throw CancellationError() }
        if eventLoop.inEventLoop {
            // Nothing buffered (a request/response peer waits for the reply) is asked here, without a call.
            if socket.pendingCount > 0, let data = try socket.readImmediately(kind, maxLength: maxLength) { return data }
            return try await readOnLoop(kind, maxLength: maxLength, task: task)
        }
        return try await readFromOtherThread(kind, maxLength: maxLength)
    }

    /// The common server case, a task running on the socket's loop: the read is queued synchronously before
    /// the task suspends, with its continuation stored in the operation, so a read allocates no object and
    /// queues no closure. Only a cancellation (which may come from any thread) goes through the loop's queue,
    /// and finds the read by its operation id, reserved here: through the read's own cancellation handler,
    /// or, for the task running an `executeThenClose` body, through that scope's one handler, which finds
    /// the id recorded in the scope.
    @inline(__always) nonisolated(nonsending) private func readOnLoop(_ kind: ReadOp.Kind, maxLength: Int, task: UnsafeRawPointer?) async throws -> Data {
        let socket = self.socket
        let id = socket.reserveOpID()
        if isReadScope(task) {
            let handler = self.handler
            handler.scopeReadID = id
            defer { handler.scopeReadID = nil }
            // No second look at cancellation once queued: the scope's handler always reaches the read
            // through the loop (inline only when the canceller runs on the loop, and so not while this task
            // does), so a cancellation after the check above finds the read queued under `scopeReadID`.
            return try await queueReadAndWait(kind, maxLength: maxLength, id: id, checkCancelled: false)
        }
        return try await readWithOwnCancellation(kind, maxLength: maxLength, id: id)
    }

    /// A read on the loop outside an `executeThenClose` scope, with its own cancellation registration. Out of
    /// line: the registration's locals would otherwise enlarge every read's async frame (see `queueAsyncRead`).
    @inline(never) nonisolated(nonsending) private func readWithOwnCancellation(_ kind: ReadOp.Kind, maxLength: Int, id: UInt32) async throws -> Data {
        let socket = self.socket
        return try await withCancellationHandler {
            // The handler runs at once, before the read is queued, if the task was cancelled since the check
            // in `read`: it finds no read, so the queueing looks again.
            try await queueReadAndWait(kind, maxLength: maxLength, id: id, checkCancelled: true)
        } onCancel: {
            socket.onLoop { socket.cancelRead(id: id) }
        }
    }

    /// Queues the read with id `id` and suspends until its operation resumes it; with `checkCancelled`, a
    /// cancellation that came before the read was queued fails it at once.
    ///
    /// No ``HandOff/received()`` after it: the loop resumes this task on its own thread (the task runs on the
    /// loop), so the sanitizer sees the ordering without help.
    @inline(__always) nonisolated(nonsending) private func queueReadAndWait(_ kind: ReadOp.Kind, maxLength: Int, id: UInt32, checkCancelled: Bool) async throws -> Data {
        let socket = self.socket
        return try await _unsafeInheritExecutor_withUnsafeThrowingContinuation { (continuation: ReadContinuation) in
            socket.queueAsyncRead(kind, maxLength: maxLength, id: id, continuation: continuation, checkCancelled: checkCancelled)
        }
    }

    /// A task on another thread: the read is handed to the loop, and whichever of the queueing and a
    /// cancellation reaches the loop first decides (``PendingCancellation`` records the order).
    nonisolated(nonsending) private func readFromOtherThread(_ kind: ReadOp.Kind, maxLength: Int) async throws -> Data {
        let socket = self.socket
        let cancellation = PendingCancellation<UInt32>()
        defer { HandOff.received() }
        return try await withCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: ReadContinuation) in
                socket.postAsyncRead(kind, maxLength: maxLength, cancellation: cancellation, continuation: continuation)
            }
        } onCancel: {
            socket.onLoop {
                cancellation.cancelled = true
                if let id = cancellation.id { socket.cancelRead(id: id) }
            }
        }
    }

    /// The chunks of a connection, as an `AsyncSequence`.
    public struct Chunks: AsyncSequence, Sendable {
        /// The bytes one read returned.
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
