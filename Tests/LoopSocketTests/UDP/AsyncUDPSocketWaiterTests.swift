import Dispatch
import EpollLoop
import FoundationEssentials
import XCTest

@testable import LoopSocket

/// The continuations an `AsyncUDPSocket` keeps for suspended calls: a second call into a one-call slot is
/// refused at once with a typed error (never stored over the first, which would then never resume), and a
/// close resumes every call still waiting. Every scenario is bounded (``bounded(_:)``): a call left suspended
/// fails the test instead of hanging it.
///
/// The tasks that make the calls are created together on the socket's loop: their first jobs run there one
/// after another, in order, before anything they cause (a connect's outcome) comes back to the loop.
final class AsyncUDPSocketWaiterTests: SocketTestCase {
    override class var loopCount: Int { 2 }

    /// Two connects started in the same loop turn (two tasks on the socket's loop, created together, run one
    /// after the other before the first connect's outcome, which the loop reports on its next turn).
    func testASecondConcurrentConnectIsRefusedAtOnceAndTheFirstCompletes() {
        bounded { [loops = group.loops] in
            let socket = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[0])
            let peer = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[1])
            let port = peer.localPort
            let (first, second) = await Task(executorPreference: loops[0]) { Self.twoConnects(socket, to: port) }.value
            let refusal = await second.result
            XCTAssertThrowsError(try refusal.get()) { error in
                let error = error as? GCDAsyncUdpSocketError
                XCTAssertEqual(error?.code, .badConfigError)
                XCTAssertTrue(error?.message.contains("still waiting") == true, "\(String(describing: error))")
            }
            try await first.value
            XCTAssertTrue(socket.socket.isConnected())
            XCTAssertEqual(socket.socket.connectedPort(), peer.localPort)
            try await socket.send(Data("to the peer".utf8))
            let received = try await peer.receive()
            XCTAssertEqual(received?.data, Data("to the peer".utf8))
            await socket.close()
            await peer.close()
        }
    }

    func testCloseResumesAWaitingConnectAndReceiveWhenASecondConnectWasRefused() {
        bounded { [loops = group.loops] in
            let socket = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[0])
            // A receive, both connects and the close in one loop turn, in that order: the close comes while
            // the receive and the first connect wait, before the connect's outcome.
            let (receiver, first, second, closed) = await Task(executorPreference: loops[0]) {
                let receiver = Task(executorPreference: loops[0]) { try await socket.receive() }
                let (first, second) = Self.twoConnects(socket, to: 9)
                return (receiver, first, second, Task(executorPreference: loops[0]) { await socket.close() })
            }.value
            await closed.value
            for (name, connect) in [("first", first), ("second", second)] {
                let outcome = await connect.result
                XCTAssertThrowsError(try outcome.get(), "\(name) connect") { error in
                    let code = (error as? GCDAsyncUdpSocketError)?.code
                    XCTAssertTrue(code == .closedError || code == .badConfigError, "\(name): \(error)")
                }
            }
            let firstError = (await first.result).failure as? GCDAsyncUdpSocketError
            XCTAssertEqual(firstError?.code, .closedError, "the close ended the connect that was waiting")
            let end = try await receiver.value
            XCTAssertNil(end, "the close ended the waiting receive")
        }
    }

    func testAConnectAfterCloseFailsWithTheClosedError() {
        bounded { [loops = group.loops] in
            let socket = try await AsyncUDPSocket.bind(host: "127.0.0.1", port: 0, loop: loops[0])
            await socket.close()
            do {
                try await socket.connect(host: "127.0.0.1", port: 9)
                XCTFail("a connect after close must fail")
            } catch let error as GCDAsyncUdpSocketError {
                XCTAssertEqual(error.code, .closedError)
            }
            XCTAssertTrue(socket.socket.isClosed(), "the refused connect made no descriptor")
        }
    }

    // MARK: Helpers

    /// Runs `body` in a task and waits for it, at most the test timeout, from the test's thread (no loop's):
    /// a call that never resumes fails the test. (Not `withDeadline`, whose timer would open the global
    /// executor's timerfd inside the test, counted as a leaked descriptor when this class runs first.)
    private func bounded(file: StaticString = #filePath, line: UInt = #line, _ body: @escaping @Sendable () async throws -> Void) {
        let outcome = Locked<(any Error)?>(nil)
        let done = Signal()
        let task = Task {
            do { try await body() } catch { outcome.value = error }
            done.fire()
        }
        guard done.wait() else {
            task.cancel()
            return XCTFail("a call was still suspended after \(Int(testTimeout)) s", file: file, line: line)
        }
        if let error = outcome.value { XCTFail("threw \(error)", file: file, line: line) }
    }

    /// Starts two connects to 127.0.0.1:`port` from two tasks on the socket's loop. Called on that loop, both
    /// tasks' first jobs are queued there at once, ahead of the first connect's outcome, which the loop
    /// queues when the first job runs: so both calls are made before the first completes.
    private static func twoConnects(
        _ socket: AsyncUDPSocket, to port: UInt16
    ) -> (Task<Void, any Error>, Task<Void, any Error>) {
        (Task(executorPreference: socket.eventLoop) { try await socket.connect(host: "127.0.0.1", port: port) },
         Task(executorPreference: socket.eventLoop) { try await socket.connect(host: "127.0.0.1", port: port) })
    }
}

extension Result {
    /// The error, if this is a failure.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
