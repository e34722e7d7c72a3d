import Dispatch
import Foundation
import LoopSocket

/// A version counter that every recorder bumps, so the test thread can wait for "anything new" from the
/// socket under test, its peer socket and the raw peer's thread at once, with a bounded wait.
final class ModelChanges: Sendable {
    private let waiter = ConditionWaiter()
    private let version = Locked(0)

    func bump() { waiter.update { version.withLock { $0 += 1 } } }

    var current: Int { version.value }

    /// Waits until something changed after `seen`, or until `deadline`.
    func wait(after seen: Int, until deadline: Date) {
        _ = waiter.wait(timeout: deadline.timeIntervalSinceNow) { version.value != seen }
    }
}

/// Records every callback per socket, in order, for the model to check; answers read timeouts from a
/// script-given list. Unlike the suite's RecordingDelegate it wakes a shared ``ModelChanges`` and keeps no
/// hooks, and a case drops it whole (a long run makes thousands).
final class ModelDelegate: GCDAsyncSocketDelegate, @unchecked Sendable {
    private let log = Locked<[ObjectIdentifier: [SocketEvent]]>([:])
    private let timeoutReplies = Locked<[TimeInterval]>([])
    private let changes: ModelChanges

    init(_ changes: ModelChanges) { self.changes = changes }

    /// `sock`'s events from `index` on.
    func events(of sock: ObjectIdentifier, from index: Int) -> [SocketEvent] {
        log.withLock { log in
            guard let events = log[sock], events.count > index else { return [] }
            return Array(events[index...])
        }
    }

    /// The sockets accepted by `listener` so far.
    func accepted(by listener: GCDAsyncSocket) -> [GCDAsyncSocket] {
        events(of: ObjectIdentifier(listener), from: 0).compactMap { event in
            if case .accepted(let child) = event { return child }
            return nil
        }
    }

    func setTimeoutReplies(_ replies: [TimeInterval]) { timeoutReplies.value = replies }

    /// Forgets everything (the accepted sockets it holds among them).
    func reset() { log.value = [:] }

    private func record(_ sock: GCDAsyncSocket, _ event: SocketEvent) {
        log.withLock { $0[ObjectIdentifier(sock), default: []].append(event) }
        changes.bump()
    }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) { record(sock, .accepted(newSocket)) }
    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) { record(sock, .connected(host: host, port: port)) }
    func socket(_ sock: GCDAsyncSocket, didConnectTo url: URL) { record(sock, .connectedURL(url)) }
    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) { record(sock, .read(data, tag: tag)) }
    func socket(_ sock: GCDAsyncSocket, didReadPartialDataOfLength partialLength: UInt, tag: Int) {
        record(sock, .readPartial(partialLength, tag: tag))
    }
    func socket(_ sock: GCDAsyncSocket, didWriteDataWithTag tag: Int) { record(sock, .wrote(tag: tag)) }
    func socket(_ sock: GCDAsyncSocket, didWritePartialDataOfLength partialLength: UInt, tag: Int) {
        record(sock, .wrotePartial(partialLength, tag: tag))
    }

    func socket(_ sock: GCDAsyncSocket, shouldTimeoutReadWithTag tag: Int, elapsed: TimeInterval, bytesDone length: UInt) -> TimeInterval {
        record(sock, .shouldTimeoutRead(tag: tag, elapsed: elapsed, done: length))
        return timeoutReplies.withLock { $0.isEmpty ? 0 : $0.removeFirst() }
    }

    func socket(_ sock: GCDAsyncSocket, shouldTimeoutWriteWithTag tag: Int, elapsed: TimeInterval, bytesDone length: UInt) -> TimeInterval {
        record(sock, .shouldTimeoutWrite(tag: tag, elapsed: elapsed, done: length))
        return 0
    }

    func socketDidCloseReadStream(_ sock: GCDAsyncSocket) { record(sock, .closedReadStream) }
    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: (any Error)?) { record(sock, .disconnected(err)) }
    func socketDidSecure(_ sock: GCDAsyncSocket) { record(sock, .secured) }
    func socket(_ sock: GCDAsyncSocket, didChangeWritability isWritable: Bool) { record(sock, .writability(isWritable)) }
    func socket(_ sock: GCDAsyncSocket, didFailToWriteDataWithTag tag: Int, error: any Error) { record(sock, .failedWrite(tag: tag, error)) }
    func socket(_ sock: GCDAsyncSocket, didFailToReadDataWithTag tag: Int, error: any Error) { record(sock, .failedRead(tag: tag, error)) }
    func socket(_ sock: GCDAsyncSocket, didFailToAcceptWithError error: any Error) { record(sock, .failedAccept(error)) }
}
