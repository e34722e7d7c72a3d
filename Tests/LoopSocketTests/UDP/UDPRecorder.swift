import Dispatch
import Foundation
import LoopSocket
import XCTest

/// One `GCDAsyncUdpSocketDelegate` callback, as recorded.
enum UDPEvent: CustomStringConvertible {
    case connected(Data)
    case notConnected((any Error)?)
    case sent(tag: Int)
    case notSent(tag: Int, (any Error)?)
    case received(Data, from: Data, context: Any?)
    case notReceived(any Error)
    case closed((any Error)?)

    var description: String {
        switch self {
        case .connected(let address): return "connected(\(GCDAsyncUdpSocket.host(fromAddress: address) ?? "?"))"
        case .notConnected(let error): return "notConnected(\(error.map { "\($0)" } ?? "nil"))"
        case .sent(let tag): return "sent(\(tag))"
        case .notSent(let tag, let error): return "notSent(\(tag), \(error.map { "\($0)" } ?? "nil"))"
        case .received(let data, _, _): return "received(\(data.count) bytes)"
        case .notReceived(let error): return "notReceived(\(error))"
        case .closed(let error): return "closed(\(error.map { "\($0)" } ?? "nil"))"
        }
    }
}

/// A UDP delegate that records every callback (thread-safe) and lets tests wait, bounded, for what they expect.
/// `onReceive` runs inside the receive callback (on the loop or the delegate queue), for echoing or pausing.
final class UDPRecorder: GCDAsyncUdpSocketDelegate, @unchecked Sendable {
    private let waiter = ConditionWaiter()
    private var _events: [UDPEvent] = []
    private var _onLoop: [Bool] = []
    private var _queueTags: [String?] = []
    var onReceive: ((GCDAsyncUdpSocket, Data, Data) -> Void)?

    var events: [UDPEvent] { waiter.read { _events } }
    /// For each event, whether it ran on the socket's loop thread.
    var ranOnLoop: [Bool] { waiter.read { _onLoop } }
    var queueTags: [String?] { waiter.read { _queueTags } }

    var received: [Data] {
        events.compactMap { if case .received(let data, _, _) = $0 { return data } else { return nil } }
    }
    var receivedRecords: [(data: Data, address: Data, context: Any?)] {
        events.compactMap { if case .received(let data, let address, let context) = $0 { return (data, address, context) } else { return nil } }
    }
    var sentTags: [Int] {
        events.compactMap { if case .sent(let tag) = $0 { return tag } else { return nil } }
    }
    var failedSends: [(tag: Int, error: GCDAsyncUdpSocketError?)] {
        events.compactMap { if case .notSent(let tag, let error) = $0 { return (tag, error as? GCDAsyncUdpSocketError) } else { return nil } }
    }
    var receiveErrors: [GCDAsyncUdpSocketError] {
        events.compactMap { if case .notReceived(let error) = $0 { return error as? GCDAsyncUdpSocketError } else { return nil } }
    }

    /// Waits until `predicate` holds over the events; fails the test (and returns false) after the timeout.
    @discardableResult
    func wait(_ what: String, file: StaticString = #filePath, line: UInt = #line, until predicate: ([UDPEvent]) -> Bool) -> Bool {
        let ok = waiter.wait { predicate(_events) }
        if !ok { XCTFail("timed out waiting for \(what); events: \(events)", file: file, line: line) }
        return ok
    }

    func waitForReceived(_ count: Int, file: StaticString = #filePath, line: UInt = #line) {
        wait("\(count) datagrams", file: file, line: line) { events in
            events.reduce(0) { if case .received = $1 { return $0 + 1 } else { return $0 } } >= count
        }
    }

    func waitForOutcomes(_ count: Int, file: StaticString = #filePath, line: UInt = #line) {
        wait("\(count) send outcomes", file: file, line: line) { events in
            events.reduce(0) { total, event in
                switch event {
                case .sent, .notSent: return total + 1
                default: return total
                }
            } >= count
        }
    }

    func waitForClose(file: StaticString = #filePath, line: UInt = #line) {
        wait("close", file: file, line: line) { $0.contains { if case .closed = $0 { return true } else { return false } } }
    }

    private func record(_ sock: GCDAsyncUdpSocket, _ event: UDPEvent) {
        let onLoop = sock.eventLoop.inEventLoop
        let tag = DispatchQueue.getSpecific(key: RecordingDelegate.queueKey)
        waiter.update {
            _events.append(event)
            _onLoop.append(onLoop)
            _queueTags.append(tag)
        }
    }

    func udpSocket(_ sock: GCDAsyncUdpSocket, didConnectToAddress address: Data) { record(sock, .connected(address)) }
    func udpSocket(_ sock: GCDAsyncUdpSocket, didNotConnect error: Error?) { record(sock, .notConnected(error)) }
    func udpSocket(_ sock: GCDAsyncUdpSocket, didSendDataWithTag tag: Int) { record(sock, .sent(tag: tag)) }
    func udpSocket(_ sock: GCDAsyncUdpSocket, didNotSendDataWithTag tag: Int, dueToError error: Error?) {
        record(sock, .notSent(tag: tag, error))
    }
    func udpSocket(_ sock: GCDAsyncUdpSocket, didReceive data: Data, fromAddress address: Data, withFilterContext filterContext: Any?) {
        record(sock, .received(data, from: address, context: filterContext))
        onReceive?(sock, data, address)
    }
    func udpSocket(_ sock: GCDAsyncUdpSocket, didNotReceiveDataDueToError error: Error) { record(sock, .notReceived(error)) }
    func udpSocketDidClose(_ sock: GCDAsyncUdpSocket, withError error: Error?) { record(sock, .closed(error)) }
}

/// Helpers for UDP tests on the test case's own group (closed, and descriptors checked, in tearDown).
extension SocketTestCase {
    func makeUDP(_ delegate: UDPRecorder?, queue: DispatchQueue? = nil, loop: EventLoop? = nil) -> GCDAsyncUdpSocket {
        let socket = GCDAsyncUdpSocket(delegate: delegate, delegateQueue: queue, loop: loop ?? group.next())
        // The socket holds its delegate weakly, as GCDAsyncUdpSocket does: the test keeps it alive.
        addTeardown { socket.close(); _ = delegate }
        return socket
    }

    /// A socket bound to `host` on an OS-chosen port, receiving continuously.
    func makeReceiver(_ delegate: UDPRecorder, host: String = "127.0.0.1", queue: DispatchQueue? = nil) throws -> GCDAsyncUdpSocket {
        let socket = makeUDP(delegate, queue: queue)
        try socket.bind(toPort: 0, interface: host)
        try socket.beginReceiving()
        XCTAssertNotEqual(socket.localPort(), 0)
        return socket
    }

    /// A receiver that sends every datagram back to its sender.
    func makeEchoServer(host: String = "127.0.0.1") throws -> (GCDAsyncUdpSocket, UDPRecorder) {
        let delegate = UDPRecorder()
        delegate.onReceive = { sock, data, address in sock.send(data, toAddress: address, withTimeout: -1, tag: 0) }
        return (try makeReceiver(delegate, host: host), delegate)
    }
}

import EpollLoop
