import EpollLoop
import FoundationEssentials

/// `executeThenClose`: a connection's whole life in one call, closed gracefully at the end, with one
/// cancellation registration for all of its reads.
extension AsyncSocket {
    /// Runs `body` with this connection, then closes it with ``closeAfterWriting(timeout:)`` whether `body`
    /// returned or threw, so what it wrote is delivered either way: a server shutting down cancels its
    /// connection tasks, their waiting reads throw `CancellationError`, and the replies already written
    /// still go out.
    ///
    /// ```swift
    /// tasks.addTask(executorPreference: connection.eventLoop) {
    ///     try await connection.executeThenClose { connection in
    ///         while let chunk = try await connection.read() {
    ///             try await connection.write(chunk)
    ///         }
    ///     }
    /// }
    /// ```
    ///
    /// It is also the faster way to read: while `body` runs on the socket's loop, the reads it makes share one
    /// cancellation registration, made here, instead of each adding and removing its own in the task's status
    /// (about 600 instructions, a tenth of an echo round trip). Reads from other tasks keep their own.
    /// Cancellation behaves exactly as for any read.
    ///
    /// - Parameters:
    ///   - closeTimeout: bounds the close, for a peer that stops reading (30 s unless given; nil waits as long
    ///     as it takes).
    ///   - body: what to do with the connection.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws; else, if the close had to drop queued bytes, its error (see
    ///   ``closeAfterWriting(timeout:)``).
    nonisolated(nonsending) public func executeThenClose<R>(
        closeTimeout: Duration? = .seconds(30), _ body: nonisolated(nonsending) (AsyncSocket) async throws -> R
    ) async throws -> R {
        // No `Result<R, any Error>` here: this function is called unspecialised (it is not inlinable), and
        // such a local made the runtime look up the generic `Result` metadata on every call, twice.
        let value: R
        do {
            value = try await run(body)
        } catch {
            try? await closeAfterWriting(timeout: closeTimeout)
            throw error
        }
        try await closeAfterWriting(timeout: closeTimeout)
        return value
    }

    /// Runs `body`, in a read scope when this task can open one.
    @inline(__always) nonisolated(nonsending) private func run<R>(
        _ body: nonisolated(nonsending) (AsyncSocket) async throws -> R
    ) async throws -> R {
        guard let serial = claimReadScope() else { return try await body(self) }
        let (socket, handler) = (self.socket, self.handler)
        defer { releaseReadScope(serial) }
        return try await withCancellationHandler {
            try await body(self)
        } onCancel: {
            socket.onLoop {
                if handler.scopeSerial == serial, let id = handler.scopeReadID { socket.cancelRead(id: id) }
            }
        }
    }

    /// Makes the current task the socket's read scope, if it runs on the loop and no other scope is open;
    /// returns the scope's serial. The scope is kept in the handler's fields, not an object of its own: it
    /// lasts as long as the connection, and every idle connection would carry one more allocation.
    private func claimReadScope() -> UInt32? {
        guard eventLoop.inEventLoop, handler.scopeTask == nil, let task = Self.currentTask() else { return nil }
        handler.scopeSerial &+= 1
        handler.scopeTask = task
        handler.scopeReadID = nil
        return handler.scopeSerial
    }

    private func releaseReadScope(_ serial: UInt32) {
        // On the loop (as a scope's task nearly always is), without the closure `onLoop` would allocate.
        if eventLoop.inEventLoop { return Self.closeReadScope(handler, serial) }
        socket.onLoop { [handler] in Self.closeReadScope(handler, serial) }
    }

    private static func closeReadScope(_ handler: AsyncSocketHandler, _ serial: UInt32) {
        guard handler.scopeSerial == serial else { return }
        handler.scopeTask = nil
        handler.scopeReadID = nil
    }

    /// Whether `task` (the running task, ``currentTask()``) is the one of the open read scope. Loop only.
    func isReadScope(_ task: UnsafeRawPointer?) -> Bool {
        guard let scopeTask = handler.scopeTask else { return false }
        return task == scopeTask
    }

    /// The current task's address (identity only: never dereferenced, and compared only while the scope's
    /// task, which opened the scope, is alive), from the runtime directly (TaskRuntime.swift):
    /// `withUnsafeCurrentTask` costs a generic closure and a retain and release of the task, most of what the
    /// scope saves.
    static func currentTask() -> UnsafeRawPointer? { swiftTaskGetCurrent() }
}
