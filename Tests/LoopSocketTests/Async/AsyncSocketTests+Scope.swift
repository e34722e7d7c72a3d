import EpollLoop
import FoundationEssentials
import Glibc
@testable import LoopSocket
import XCTest

/// `executeThenClose`: its value and graceful close, and its reads, which share one cancellation registration.
extension AsyncSocketTests {
    /// The body's value comes back, the replies it wrote reach the peer, and the peer then reads end of stream.
    func testExecuteThenCloseReturnsTheBodysValueAndClosesGracefully() async throws {
        let (client, peer) = try await connectedPair()
        defer { Glibc.close(peer) }
        try await withDeadline {
            let echo = Task(executorPreference: client.eventLoop) {
                try await client.executeThenClose { connection in
                    var echoed = 0
                    while let chunk = try await connection.read() {
                        try await connection.write(chunk)
                        echoed += chunk.count
                    }
                    return echoed
                }
            }
            Self.send(peer, "hello, ")
            Self.send(peer, "scope")
            XCTAssertEqual(shutdown(peer, Int32(SHUT_WR)), 0)
            let reply = await Self.receive(peer, count: 100).value  // to end of stream
            XCTAssertEqual(String(decoding: reply, as: UTF8.self), "hello, scope")
            let echoed = try await echo.value
            XCTAssertEqual(echoed, 12)
            XCTAssertTrue(client.socket.isDisconnected)
        }
    }

    /// A read of the scope's task waits under the scope's registration (no record of its own) and is still
    /// cancelled by cancelling the task; the scope then closes the connection and rethrows.
    func testExecuteThenCloseReadIsCancelledThroughTheScope() async throws {
        let (client, peer) = try await connectedPair()
        defer { Glibc.close(peer) }
        try await withDeadline {
            let reader = Task(executorPreference: client.eventLoop) {
                try await client.executeThenClose { connection in try await connection.read(toLength: 10) }
            }
            // The read waits in the scope: its id is recorded there (it would not be on the per-read path).
            try await Self.eventually { await Self.onLoop(client) { client.handler.scopeReadID != nil } }
            reader.cancel()
            try await Self.assertCancelled(reader, "the scoped read")
            XCTAssertTrue(client.socket.isDisconnected)
            let end = await Self.receive(peer, count: 1).value
            XCTAssertTrue(end.isEmpty, "the peer reads end of stream")
        }
    }

    /// Cancellation racing the scope's reads at every point (before a read is queued, while it waits, as data
    /// arrives): each scope ends, with `CancellationError` or after reading everything, and never hangs.
    func testExecuteThenCloseReadsRacingCancellationNeverHang() async throws {
        for round in 0..<60 {
            let (client, peer) = try await connectedPair()
            defer { Glibc.close(peer) }
            try await withDeadline {
                let reader = Task(executorPreference: client.eventLoop) {
                    try await client.executeThenClose { connection in
                        var total = 0
                        while total < 40, let chunk = try await connection.read(maxLength: 3) { total += chunk.count }
                        return total
                    }
                }
                for i in 0..<10 {
                    if i == round % 10 { reader.cancel() }
                    _ = Glibc.send(peer, "abcd", 4, Int32(MSG_NOSIGNAL))  // fails once the scope has closed
                }
                do {
                    let total = try await reader.value
                    XCTAssertEqual(total, 40, "a scope that was not cancelled in time reads everything")
                } catch is CancellationError {
                }
                XCTAssertTrue(client.socket.isDisconnected)
            }
        }
    }

    /// Another task reading the same socket while a scope is open keeps its own cancellation registration:
    /// cancelling that task cancels its read (with the scope's registration it would wait for data).
    func testReadFromAnotherTaskDuringAScopeHasItsOwnCancellation() async throws {
        let (client, peer) = try await connectedPair()
        defer { Glibc.close(peer) }
        try await withDeadline {
            let (release, releaseSignal) = AsyncStream<Void>.makeStream()
            let scope = Task(executorPreference: client.eventLoop) {
                try await client.executeThenClose { _ in
                    var signals = release.makeAsyncIterator()
                    _ = await signals.next()
                }
            }
            try await Self.eventually { await Self.onLoop(client) { client.handler.scopeTask != nil } }
            let other = Task(executorPreference: client.eventLoop) { try await client.read(toLength: 4) }
            try await Self.eventually { await Self.onLoop(client) { !client.socket.reads.isEmpty } }
            let onScopesRecord = await Self.onLoop(client) { client.handler.scopeReadID != nil }
            XCTAssertFalse(onScopesRecord, "the other task's read must not use the scope")
            other.cancel()
            try await Self.assertCancelled(other, "the other task's read")
            releaseSignal.finish()
            try await scope.value
        }
    }
}
