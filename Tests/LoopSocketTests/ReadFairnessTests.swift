import Dispatch
@testable import EpollLoop
import Foundation
import Glibc
@testable import LoopSocket
import XCTest

/// Records, on the loop, every chunk a continuous reader delivers and the loop iteration it came in.
private final class TurnRecorder: NSObject, GCDAsyncSocketDelegate, @unchecked Sendable {
    struct Chunk {
        let tag: Int
        let count: Int
        let iteration: UInt64
    }

    private let waiter = ConditionWaiter()
    private var _accepted: [GCDAsyncSocket] = []
    private var _chunks: [Chunk] = []

    var accepted: [GCDAsyncSocket] { waiter.read { _accepted } }
    var chunks: [Chunk] { waiter.read { _chunks } }

    func wait(until predicate: @escaping ([GCDAsyncSocket], [Chunk]) -> Bool) -> Bool {
        waiter.wait { predicate(_accepted, _chunks) }
    }

    func bytes(tag: Int) -> Int { chunks.filter { $0.tag == tag }.reduce(0) { $0 + $1.count } }

    func forget() { waiter.update { _accepted = [] } }

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        waiter.update { _accepted.append(newSocket) }
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        let chunk = Chunk(tag: tag, count: data.count, iteration: sock.eventLoop.iterations)
        waiter.update { _chunks.append(chunk) }
    }
}

/// Fairness: a socket reads at most ``SocketOptions/maxReadsPerWakeup`` times per readiness event, so a
/// flooding peer delays the other connections of its loop by one bounded turn.
final class ReadFairnessTests: SocketTestCase {
    /// Bytes the kernel holds for `sock` to read (`FIONREAD`).
    private func unread(_ sock: GCDAsyncSocket) throws -> Int {
        try onLoop(loop) {
            var count: Int32 = 0
            _ = ioctl(sock.fd, UInt(FIONREAD), &count)
            return Int(count)
        }
    }

    /// A flood of 2 MiB already waiting in the kernel and a one-byte probe on another connection of the
    /// same loop: the flood is read in turns of at most four 64 KiB reads per loop iteration, and the probe
    /// is read after at most two such turns (the turn under way and, epoll's order permitting, one more).
    func testFloodingPeerTakesOneBoundedTurnPerWakeup() throws {
        let recorder = TurnRecorder()
        let server = makeSocket(recorder)
        // Room in the kernel for the whole flood before the server reads any of it.
        server.options.receiveBufferSize = 4 << 20
        try server.accept(onInterface: "127.0.0.1", port: 0)
        let flooder = try RawSocket(connectTo: "127.0.0.1", port: server.localPort)
        XCTAssertTrue(recorder.wait { accepted, _ in accepted.count == 1 })
        let prober = try RawSocket(connectTo: "127.0.0.1", port: server.localPort)
        XCTAssertTrue(recorder.wait { accepted, _ in accepted.count == 2 })
        let (flood, probe) = (recorder.accepted[0], recorder.accepted[1])

        let floodBytes = 2 << 20
        try flooder.send(patternData(floodBytes))
        try prober.send("p")
        var waited = 0
        while try unread(flood) < floodBytes || unread(probe) < 1 {
            waited += 1
            guard waited < 1000 else { return XCTFail("the kernel never held the flood: \(try unread(flood)) bytes") }
            settle(loop)
        }
        // Both start reading in the same loop task: from here on both are always readable until the probe
        // is read.
        try onLoop(loop) {
            flood.beginReceiving(tag: 1)
            probe.beginReceiving(tag: 2)
        }
        XCTAssertTrue(recorder.wait { _, chunks in
            chunks.reduce(0) { $0 + ($1.tag == 1 ? $1.count : 0) } == floodBytes && chunks.contains { $0.tag == 2 }
        })

        let turn = SocketOptions().maxReadsPerWakeup * LoopContext.receiveBufferSize
        let chunks = recorder.chunks
        let perIteration = Dictionary(grouping: chunks.filter { $0.tag == 1 }, by: \.iteration).mapValues { $0.reduce(0) { $0 + $1.count } }
        XCTAssertLessThanOrEqual(perIteration.values.max() ?? 0, turn, "bytes of the flood read per loop iteration: \(perIteration.sorted { $0.key < $1.key }.map(\.value))")
        let probeIndex = chunks.firstIndex { $0.tag == 2 } ?? chunks.count
        let floodBeforeProbe = chunks[..<probeIndex].reduce(0) { $0 + $1.count }
        XCTAssertLessThanOrEqual(floodBeforeProbe, 2 * turn, "the probe waited for \(floodBeforeProbe) bytes of the flood")
        XCTAssertGreaterThan(perIteration.count, 2, "the flood was read in turns")

        recorder.forget()
        flood.disconnect()
        probe.disconnect()
        server.disconnect()
        settleAll()
    }

    /// The budget is an option: at one read per wakeup the flood comes in 64 KiB turns.
    func testMaxReadsPerWakeupIsAnOption() throws {
        let recorder = TurnRecorder()
        let server = makeSocket(recorder)
        server.options.receiveBufferSize = 4 << 20
        server.options.maxReadsPerWakeup = 1
        try server.accept(onInterface: "127.0.0.1", port: 0)
        let flooder = try RawSocket(connectTo: "127.0.0.1", port: server.localPort)
        XCTAssertTrue(recorder.wait { accepted, _ in accepted.count == 1 })
        let flood = recorder.accepted[0]
        let floodBytes = 1 << 20
        try flooder.send(patternData(floodBytes))
        var waited = 0
        while try unread(flood) < floodBytes {
            waited += 1
            guard waited < 1000 else { return XCTFail("the kernel never held the flood") }
            settle(loop)
        }
        try onLoop(loop) { flood.beginReceiving(tag: 1) }
        XCTAssertTrue(recorder.wait { _, chunks in chunks.reduce(0) { $0 + $1.count } == floodBytes })
        let perIteration = Dictionary(grouping: recorder.chunks, by: \.iteration).mapValues { $0.reduce(0) { $0 + $1.count } }
        XCTAssertLessThanOrEqual(perIteration.values.max() ?? 0, LoopContext.receiveBufferSize)
        recorder.forget()
        flood.disconnect()
        server.disconnect()
        settleAll()
    }
}
