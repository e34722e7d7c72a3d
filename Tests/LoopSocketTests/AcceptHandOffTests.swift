import Dispatch
import Foundation
import XCTest

@testable import LoopSocket

/// The hand-off of an accepted connection to its own loop: `didAcceptNewSocket` comes before any callback
/// of the new socket, and a delegate that takes the socket over there (as ``AsyncListener`` does) gets all
/// of its events, even for clients that reset the connection as soon as it is made.
final class AcceptHandOffTests: SocketTestCase {
    override class var loopCount: Int { 2 }

    /// Clients that connect and reset at once (`SO_LINGER` 0), accepted onto both loops: the listener's
    /// `connections` never ends because of one of them, and a client that stays is still served.
    func testAsyncListenerOutlivesConnectionsResetAsSoonAsMade() throws {
        let listener = try AsyncListener(host: "127.0.0.1", port: 0, group: group)
        let seen = Locked<(ports: Set<UInt16>, error: (any Error)?, ended: Bool)>(([], nil, false))
        let changed = Signal()
        let consumer = Task {
            do {
                for try await connection in listener.connections {
                    let port = connection.socket.connectedPort
                    seen.withLock { _ = $0.ports.insert(port) }
                    changed.fire()
                }
                seen.withLock { $0.ended = true }
            } catch {
                seen.withLock { $0.error = error }
            }
            changed.fire()
        }
        for _ in 0..<500 {
            try RawSocket(connectTo: "127.0.0.1", port: listener.localPort).resetClose()
        }
        let live = try RawSocket(connectTo: "127.0.0.1", port: listener.localPort)
        while !seen.withLock({ $0.ports.contains(live.localPort) || $0.error != nil || $0.ended }) {
            guard changed.wait() else { break }  // each wait bounded: no news within it fails below
        }
        let outcome = seen.withLock { $0 }
        XCTAssertNil(outcome.error, "the listener's connections ended with a connection's own error")
        XCTAssertFalse(outcome.ended)
        XCTAssertTrue(outcome.ports.contains(live.localPort), "the client that stayed was not handed out")
        listener.close()
        let done = Signal()
        Task {
            _ = await consumer.value
            done.fire()
        }
        XCTAssertTrue(done.wait(), "the listener's connections did not end after close()")
        live.close()
        settleAll()
    }

    /// The delegate form of the same race: no accepted socket's callback (its disconnect, here) reaches the
    /// delegate before the listener's `didAcceptNewSocket` for it has returned.
    func testDidAcceptComesBeforeAnyCallbackOfTheAcceptedSocket() throws {
        try checkDidAcceptComesFirst(queue: nil, clients: 1000)
    }

    /// The same on a delegate queue, which the accepted sockets inherit: the promise
    /// docs/migrating-from-gcdasyncsocket.md makes ("A client and a listener in one process").
    func testDidAcceptComesBeforeAnyCallbackOfTheAcceptedSocketOnADelegateQueue() throws {
        try checkDidAcceptComesFirst(queue: makeQueue("accept-order"), clients: 200)
    }

    private func checkDidAcceptComesFirst(queue: DispatchQueue?, clients: Int) throws {
        let delegate = makeDelegate("server")
        let server = try makeServer(delegate, queue: queue)
        for _ in 0..<clients {
            try RawSocket(connectTo: "127.0.0.1", port: server.localPort).resetClose()
        }
        let accepted = delegate.waitForAccepts(1)
        XCTAssertFalse(accepted.isEmpty)
        // Every accepted socket ends (each was reset); wait for all of their disconnects.
        delegate.wait("a disconnect for every accepted socket") { records in
            let acceptedCount = records.count { if case .accepted = $0.event { return true } else { return false } }
            let disconnects = records.count { $0.event.isDisconnect }
            return acceptedCount > 0 && disconnects >= acceptedCount
        }
        var acceptedSoFar = Set<ObjectIdentifier>()
        for record in delegate.records {
            switch record.event {
            case .accepted(let child):
                acceptedSoFar.insert(ObjectIdentifier(child))
            default:
                XCTAssertTrue(acceptedSoFar.contains(record.socket), "\(record.event) before didAcceptNewSocket")
            }
        }
        if queue != nil {
            XCTAssertTrue(delegate.records.allSatisfy { $0.queueTag == "accept-order" && !$0.onLoop })
        }
        server.disconnect()
        settleAll()
    }
}
