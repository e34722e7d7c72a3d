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
        let result: Result<R, any Error>
        if let scope = claimReadScope() {
            let socket = self.socket
            do {
                result = .success(try await withCancellationHandler {
                    try await body(self)
                } onCancel: {
                    socket.onLoop { if let id = scope.readID { socket.cancelRead(id: id) } }
                })
            } catch {
                result = .failure(error)
            }
            releaseReadScope(scope)
        } else {
            do {
                result = .success(try await body(self))
            } catch {
                result = .failure(error)
            }
        }
        switch result {
        case .success(let value):
            try await closeAfterWriting(timeout: closeTimeout)
            return value
        case .failure(let error):
            try? await closeAfterWriting(timeout: closeTimeout)
            throw error
        }
    }

    /// Makes the current task the socket's read scope, if it runs on the loop and no other scope is open.
    private func claimReadScope() -> ReadScope? {
        guard eventLoop.inEventLoop, handler.readScope == nil,
              let task = ReadScope.currentTask()
        else { return nil }
        let scope = ReadScope(task)
        handler.readScope = scope
        return scope
    }

    private func releaseReadScope(_ scope: ReadScope) {
        socket.onLoop { [handler] in
            if handler.readScope === scope { handler.readScope = nil }
        }
    }
}

/// One `executeThenClose` on the loop: the task running it (compared, never used) and the id of the read it
/// waits in. Loop-confined; a cancellation handler that fires after the scope ended finds no id.
final class ReadScope: @unchecked Sendable {
    private let task: UnsafeRawPointer
    var readID: UInt32?

    init(_ task: UnsafeRawPointer) { self.task = task }

    /// Whether the calling code runs in the scope's task.
    var isCurrentTask: Bool { Self.currentTask() == task }

    /// The current task's address (identity only: never dereferenced, and compared only while the scope's
    /// task, which created the scope, is alive), from the runtime directly: `withUnsafeCurrentTask` costs
    /// a generic closure and a retain and release of the task, most of what the scope saves.
    static func currentTask() -> UnsafeRawPointer? { currentTaskAddress() }
}

@_silgen_name("cepoll_task_current")
private func currentTaskAddress() -> UnsafeRawPointer?
