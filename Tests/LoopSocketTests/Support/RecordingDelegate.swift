import Dispatch
import Foundation
import LoopSocket
import XCTest

/// One delegate callback, as recorded.
enum SocketEvent: CustomStringConvertible {
    case accepted(GCDAsyncSocket)
    case connected(host: String, port: UInt16)
    case connectedURL(URL)
    case read(Data, tag: Int)
    case readPartial(UInt, tag: Int)
    case wrote(tag: Int)
    case wrotePartial(UInt, tag: Int)
    case shouldTimeoutRead(tag: Int, elapsed: TimeInterval, done: UInt)
    case shouldTimeoutWrite(tag: Int, elapsed: TimeInterval, done: UInt)
    case closedReadStream
    case disconnected((any Error)?)
    case writability(Bool)
    case failedWrite(tag: Int, any Error)
    case failedRead(tag: Int, any Error)
    case failedAccept(any Error)
    case secured
    case trust(TLSTrust)

    var description: String {
        switch self {
        case .accepted: return "accepted"
        case .connected(let host, let port): return "connected(\(host):\(port))"
        case .connectedURL(let url): return "connectedURL(\(url.path))"
        case .read(let data, let tag): return "read(\(data.count) bytes, tag \(tag))"
        case .readPartial(let n, let tag): return "readPartial(\(n), tag \(tag))"
        case .wrote(let tag): return "wrote(tag \(tag))"
        case .wrotePartial(let n, let tag): return "wrotePartial(\(n), tag \(tag))"
        case .shouldTimeoutRead(let tag, let elapsed, let done): return "shouldTimeoutRead(tag \(tag), \(elapsed), \(done))"
        case .shouldTimeoutWrite(let tag, let elapsed, let done): return "shouldTimeoutWrite(tag \(tag), \(elapsed), \(done))"
        case .closedReadStream: return "closedReadStream"
        case .disconnected(let error): return "disconnected(\(error.map { "\($0)" } ?? "nil"))"
        case .writability(let writable): return "writability(\(writable))"
        case .failedWrite(let tag, let error): return "failedWrite(tag \(tag), \(error))"
        case .failedRead(let tag, let error): return "failedRead(tag \(tag), \(error))"
        case .failedAccept(let error): return "failedAccept(\(error))"
        case .secured: return "secured"
        case .trust(let trust): return "trust(\(trust.certificates))"
        }
    }

    var isDisconnect: Bool {
        if case .disconnected = self { return true }
        return false
    }
}

/// A recorded callback: which socket, what, and where it ran.
struct SocketRecord {
    let socket: ObjectIdentifier
    let event: SocketEvent
    /// The callback ran on the socket's own event loop thread.
    let onLoop: Bool
    /// The value of ``RecordingDelegate/queueKey`` on the callback's queue (nil off any tagged queue).
    let queueTag: String?
}

/// A delegate that appends every callback to a log (thread-safe), lets tests wait for what they expect,
/// and can be given behaviour (echo, re-reading, timeout extensions) through hooks.
///
/// Accepted sockets are kept alive here (LoopSocket keeps them alive anyway while connected; this also
/// gives tests a handle on them).
final class RecordingDelegate: GCDAsyncSocketDelegate, @unchecked Sendable {
    static let queueKey = DispatchSpecificKey<String>()

    struct Hooks {
        var accept: ((GCDAsyncSocket, GCDAsyncSocket) -> Void)?
        var connect: ((GCDAsyncSocket) -> Void)?
        var read: ((GCDAsyncSocket, Data, Int) -> Void)?
        var partialRead: ((GCDAsyncSocket, UInt, Int) -> Void)?
        var wrote: ((GCDAsyncSocket, Int) -> Void)?
        var closedReadStream: ((GCDAsyncSocket) -> Void)?
        var disconnect: ((GCDAsyncSocket, (any Error)?) -> Void)?
        var failedAccept: ((GCDAsyncSocket, any Error) -> Void)?
        var readTimeout: ((Int, TimeInterval, UInt) -> TimeInterval)?
        var writeTimeout: ((Int, TimeInterval, UInt) -> TimeInterval)?
        var newSocketQueue: DispatchQueue?
        var secured: ((GCDAsyncSocket) -> Void)?
        var trust: ((GCDAsyncSocket, TLSTrust, @escaping @Sendable (Bool) -> Void) -> Void)?
    }

    let name: String
    private let waiter = ConditionWaiter()
    private var _records: [SocketRecord] = []
    private var _accepted: [GCDAsyncSocket] = []
    private var _hooks = Hooks()

    init(_ name: String = "delegate") { self.name = name }

    // MARK: Configuration

    func configure(_ body: (inout Hooks) -> Void) {
        waiter.update { body(&_hooks) }
    }

    /// Accepted sockets echo what they read (reading available bytes again after each chunk).
    func echoAccepted() {
        configure { hooks in
            hooks.accept = { _, child in child.readData(withTimeout: -1, tag: 0) }
            hooks.read = { sock, data, _ in
                sock.write(data, withTimeout: -1, tag: 0)
                sock.readData(withTimeout: -1, tag: 0)
            }
        }
    }

    /// Forgets hooks and accepted sockets (breaks reference cycles at the end of a test).
    func reset() {
        waiter.update {
            _hooks = Hooks()
            _accepted = []
        }
    }

    private var hooks: Hooks { waiter.read { _hooks } }

    // MARK: Reading the log

    var records: [SocketRecord] { waiter.read { _records } }
    var events: [SocketEvent] { records.map(\.event) }
    var accepted: [GCDAsyncSocket] { waiter.read { _accepted } }

    func events(of sock: GCDAsyncSocket) -> [SocketEvent] {
        let id = ObjectIdentifier(sock)
        return records.filter { $0.socket == id }.map(\.event)
    }

    /// The bytes of every completed read with `tag` (any tag when nil), concatenated in order.
    func readBytes(tag: Int? = nil, of sock: GCDAsyncSocket? = nil) -> Data {
        var result = Data()
        for record in records where sock.map({ ObjectIdentifier($0) == record.socket }) ?? true {
            if case .read(let data, let t) = record.event, tag == nil || t == tag { result.append(data) }
        }
        return result
    }

    func reads(of sock: GCDAsyncSocket? = nil) -> [(Data, Int)] {
        records.compactMap { record in
            guard sock.map({ ObjectIdentifier($0) == record.socket }) ?? true else { return nil }
            if case .read(let data, let tag) = record.event { return (data, tag) }
            return nil
        }
    }

    func count(of sock: GCDAsyncSocket? = nil, where predicate: (SocketEvent) -> Bool) -> Int {
        records.filter { record in
            (sock.map { ObjectIdentifier($0) == record.socket } ?? true) && predicate(record.event)
        }.count
    }

    func disconnects(of sock: GCDAsyncSocket? = nil) -> [(any Error)?] {
        records.compactMap { record in
            guard sock.map({ ObjectIdentifier($0) == record.socket }) ?? true else { return nil }
            if case .disconnected(let error) = record.event { return .some(error) }
            return nil
        }
    }

    // MARK: Waiting

    /// Waits (at most 10 s) until `predicate` holds for the log; records a failure with the log if it never does.
    @discardableResult
    func wait(
        _ what: String, timeout: TimeInterval = testTimeout, file: StaticString = #filePath, line: UInt = #line,
        until predicate: ([SocketRecord]) -> Bool
    ) -> Bool {
        let ok = waiter.wait(timeout: timeout) { predicate(_records) }
        if !ok {
            XCTFail("\(name): timed out waiting for \(what); log: \(events)", file: file, line: line)
        }
        return ok
    }

    /// Waits for `sock`'s (or any socket's) disconnect and returns its error.
    @discardableResult
    func waitForDisconnect(
        of sock: GCDAsyncSocket? = nil, file: StaticString = #filePath, line: UInt = #line
    ) -> (any Error)? {
        wait("socketDidDisconnect", file: file, line: line) { records in
            records.contains { record in
                record.event.isDisconnect && (sock.map { ObjectIdentifier($0) == record.socket } ?? true)
            }
        }
        return disconnects(of: sock).first ?? nil
    }

    func waitForConnect(file: StaticString = #filePath, line: UInt = #line) {
        wait("didConnect", file: file, line: line) { records in
            records.contains {
                switch $0.event {
                case .connected, .connectedURL: return true
                default: return false
                }
            }
        }
    }

    /// Waits until `count` sockets were accepted; returns them in order.
    @discardableResult
    func waitForAccepts(_ count: Int = 1, file: StaticString = #filePath, line: UInt = #line) -> [GCDAsyncSocket] {
        wait("\(count) accepted sockets", file: file, line: line) { _ in _accepted.count >= count }
        return accepted
    }

    /// Waits until the completed reads (with `tag`, any when nil) total `byteCount` bytes.
    @discardableResult
    func waitForReadBytes(
        _ byteCount: Int, tag: Int? = nil, of sock: GCDAsyncSocket? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) -> Data {
        wait("\(byteCount) bytes read", file: file, line: line) { records in
            var total = 0
            for record in records where sock.map({ ObjectIdentifier($0) == record.socket }) ?? true {
                if case .read(let data, let t) = record.event, tag == nil || t == tag { total += data.count }
            }
            return total >= byteCount
        }
        return readBytes(tag: tag, of: sock)
    }

    /// Waits for an event matching `predicate`.
    func waitFor(
        _ what: String, file: StaticString = #filePath, line: UInt = #line, _ predicate: @escaping (SocketEvent) -> Bool
    ) {
        wait(what, file: file, line: line) { records in records.contains { predicate($0.event) } }
    }

    // MARK: Recording

    private func record(_ sock: GCDAsyncSocket, _ event: SocketEvent) {
        let onLoop = sock.eventLoop.inEventLoop
        let tag = DispatchQueue.getSpecific(key: Self.queueKey)
        waiter.update {
            _records.append(SocketRecord(socket: ObjectIdentifier(sock), event: event, onLoop: onLoop, queueTag: tag))
            if case .accepted(let child) = event { _accepted.append(child) }
        }
    }

    // MARK: GCDAsyncSocketDelegate

    func newSocketQueueForConnection(fromAddress address: Data, on sock: GCDAsyncSocket) -> DispatchQueue? {
        hooks.newSocketQueue
    }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        record(sock, .accepted(newSocket))
        hooks.accept?(sock, newSocket)
    }

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        record(sock, .connected(host: host, port: port))
        hooks.connect?(sock)
    }

    func socket(_ sock: GCDAsyncSocket, didConnectTo url: URL) {
        record(sock, .connectedURL(url))
        hooks.connect?(sock)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        record(sock, .read(data, tag: tag))
        hooks.read?(sock, data, tag)
    }

    func socket(_ sock: GCDAsyncSocket, didReadPartialDataOfLength partialLength: UInt, tag: Int) {
        record(sock, .readPartial(partialLength, tag: tag))
        hooks.partialRead?(sock, partialLength, tag)
    }

    func socket(_ sock: GCDAsyncSocket, didWriteDataWithTag tag: Int) {
        record(sock, .wrote(tag: tag))
        hooks.wrote?(sock, tag)
    }

    func socket(_ sock: GCDAsyncSocket, didWritePartialDataOfLength partialLength: UInt, tag: Int) {
        record(sock, .wrotePartial(partialLength, tag: tag))
    }

    func socket(_ sock: GCDAsyncSocket, shouldTimeoutReadWithTag tag: Int, elapsed: TimeInterval, bytesDone length: UInt) -> TimeInterval {
        record(sock, .shouldTimeoutRead(tag: tag, elapsed: elapsed, done: length))
        return hooks.readTimeout?(tag, elapsed, length) ?? 0
    }

    func socket(_ sock: GCDAsyncSocket, shouldTimeoutWriteWithTag tag: Int, elapsed: TimeInterval, bytesDone length: UInt) -> TimeInterval {
        record(sock, .shouldTimeoutWrite(tag: tag, elapsed: elapsed, done: length))
        return hooks.writeTimeout?(tag, elapsed, length) ?? 0
    }

    func socketDidCloseReadStream(_ sock: GCDAsyncSocket) {
        record(sock, .closedReadStream)
        hooks.closedReadStream?(sock)
    }

    func socketDidSecure(_ sock: GCDAsyncSocket) {
        record(sock, .secured)
        hooks.secured?(sock)
    }

    func socket(_ sock: GCDAsyncSocket, didReceive trust: TLSTrust, completionHandler: @escaping @Sendable (Bool) -> Void) {
        // The hook first: a test that sees the event can count on the hook having kept the handler.
        if let hook = hooks.trust { hook(sock, trust, completionHandler) } else { completionHandler(false) }
        record(sock, .trust(trust))
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: (any Error)?) {
        record(sock, .disconnected(err))
        hooks.disconnect?(sock, err)
    }

    func socket(_ sock: GCDAsyncSocket, didChangeWritability isWritable: Bool) {
        record(sock, .writability(isWritable))
    }

    func socket(_ sock: GCDAsyncSocket, didFailToWriteDataWithTag tag: Int, error: any Error) {
        record(sock, .failedWrite(tag: tag, error))
    }

    func socket(_ sock: GCDAsyncSocket, didFailToReadDataWithTag tag: Int, error: any Error) {
        record(sock, .failedRead(tag: tag, error))
    }

    func socket(_ sock: GCDAsyncSocket, didFailToAcceptWithError error: any Error) {
        record(sock, .failedAccept(error))
        hooks.failedAccept?(sock, error)
    }
}

extension Optional where Wrapped == any Error {
    /// The LoopSocket error code, if this is a `GCDAsyncSocketError`.
    var socketCode: GCDAsyncSocketError.Code? { (self as? GCDAsyncSocketError)?.code }
}

extension Error {
    var socketError: GCDAsyncSocketError? { self as? GCDAsyncSocketError }
}
