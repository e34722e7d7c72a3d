import Dispatch
import EpollLoop
import Foundation
import Glibc
import XCTest

@testable import LoopSocket

/// The migration path: callbacks on a `DispatchQueue`, calls made from that queue; and the fast path's
/// promises (inline on the loop, never from inside the caller's own call).
final class DelegateQueueTests: SocketTestCase {
    func testCallbacksRunOnTheDelegateQueue() throws {
        let serverQueue = makeQueue("server-queue")
        let clientQueue = makeQueue("client-queue")
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()  // Calls readData and write from the queue.
        let server = try makeServer(serverDelegate, queue: serverQueue)
        let clientDelegate = makeDelegate("client")
        clientDelegate.configure { hooks in
            hooks.connect = { sock in
                sock.write(Data("from the queue".utf8), withTimeout: -1, tag: 1)
                sock.readData(toLength: 14, withTimeout: -1, tag: 2)
            }
        }
        let client = makeSocket(clientDelegate, queue: clientQueue)
        XCTAssertTrue(client.delegateQueue === clientQueue)
        try client.connect(toHost: "127.0.0.1", onPort: server.localPort)
        XCTAssertEqual(clientDelegate.waitForReadBytes(14, tag: 2), Data("from the queue".utf8))
        client.disconnect()
        clientDelegate.waitForDisconnect()
        serverDelegate.wait("the child's disconnect") { records in records.contains { $0.event.isDisconnect } }
        serverQueue.sync {}
        clientQueue.sync {}

        XCTAssertTrue(clientDelegate.records.allSatisfy { $0.queueTag == "client-queue" && !$0.onLoop },
                      "\(clientDelegate.records.map { ($0.event.description, $0.queueTag ?? "-") })")
        XCTAssertTrue(serverDelegate.records.allSatisfy { $0.queueTag == "server-queue" && !$0.onLoop },
                      "accepted sockets inherit the queue: \(serverDelegate.records.map { ($0.event.description, $0.queueTag ?? "-") })")
        XCTAssertTrue(serverDelegate.accepted.allSatisfy { $0.delegateQueue === serverQueue })
    }

    func testCallbackOrderIsKeptOnTheQueue() throws {
        let queue = makeQueue("order")
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate, queue: queue)
        for tag in 0..<50 { client.readData(toLength: 2, withTimeout: -1, tag: tag) }
        try peer.send(String(repeating: "ab", count: 50))
        delegate.waitForReadBytes(100)
        XCTAssertEqual(delegate.reads().map(\.1), Array(0..<50))
        client.disconnect()
        delegate.waitForDisconnect()
        queue.sync {}
        XCTAssertTrue(delegate.events.last?.isDisconnect ?? false)
    }

    func testTimeoutQuestionIsAskedOnTheQueue() throws {
        let queue = makeQueue("timeouts")
        let delegate = makeDelegate("client")
        delegate.configure { hooks in
            hooks.readTimeout = { _, elapsed, _ in
                dispatchPrecondition(condition: .onQueue(queue))
                return elapsed < 0.09 ? 0.05 : 0
            }
        }
        let (client, peer) = try connectToRawPeer(delegate, queue: queue)
        client.readData(toLength: 8, withTimeout: 0.05, tag: 3)
        XCTAssertEqual(delegate.waitForDisconnect().socketCode, .readTimeoutError)
        queue.sync {}
        let questions = delegate.records.filter {
            if case .shouldTimeoutRead = $0.event { return true } else { return false }
        }
        XCTAssertEqual(questions.count, 2)
        XCTAssertTrue(questions.allSatisfy { $0.queueTag == "timeouts" })
        XCTAssertEqual(questions.map(\.event.description), ["shouldTimeoutRead(tag 3, 0.05, 0)", "shouldTimeoutRead(tag 3, 0.1, 0)"])
        peer.close()
    }

    func testDataArrivingWhileTheQueueIsAskedIsKept() throws {
        // While the timeout question is out on the queue, reads pause; the answer extends the read and the
        // bytes that arrived meanwhile complete it.
        let queue = makeQueue("asking")
        let delegate = makeDelegate("client")
        let peerBox = Locked<RawSocket?>(nil)
        delegate.configure { hooks in
            hooks.readTimeout = { _, _, _ in
                try? peerBox.value?.send("abcd")
                return testTimeout
            }
        }
        let (client, peer) = try connectToRawPeer(delegate, queue: queue)
        peerBox.value = peer
        client.readData(toLength: 4, withTimeout: 0.02, tag: 1)
        XCTAssertEqual(delegate.waitForReadBytes(4, tag: 1), Data("abcd".utf8))
        XCTAssertTrue(client.isConnected)
        peerBox.value = nil
    }

    func testSwitchingDelegateMidConnection() throws {
        let first = makeDelegate("first")
        let second = makeDelegate("second")
        let queue = makeQueue("second-queue")
        let (client, peer) = try connectToRawPeer(first)
        client.readData(toLength: 1, withTimeout: -1, tag: 1)
        try peer.send("1")
        first.waitForReadBytes(1, tag: 1)
        client.setDelegate(second, delegateQueue: queue)
        XCTAssertTrue(client.delegate === second)
        client.readData(toLength: 1, withTimeout: -1, tag: 2)
        try peer.send("2")
        XCTAssertEqual(second.waitForReadBytes(1, tag: 2), Data("2".utf8))
        queue.sync {}
        XCTAssertEqual(first.reads().map(\.1), [1])
        XCTAssertEqual(second.records.first?.queueTag, "second-queue")

        client.synchronouslySetDelegate(first)
        XCTAssertTrue(client.delegate === first)
        client.synchronouslySetDelegateQueue(nil)
        XCTAssertNil(client.delegateQueue)
        client.synchronouslySetDelegate(second, delegateQueue: queue)
        XCTAssertTrue(client.delegate === second && client.delegateQueue === queue)
    }

    /// `synchronouslySetDelegate` returns only once the loop uses the new delegate (CocoaAsyncSocket's
    /// `dispatch_sync` onto the socket queue): while the loop is busy the call waits, and when it returns no
    /// callback can reach the previous delegate from the loop.
    func testSynchronouslySetDelegateWaitsForTheLoop() throws {
        let client = makeSocket(makeDelegate("old"))
        let replacement = makeDelegate("new")
        let loopBusy = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        try client.eventLoop.execute {
            loopBusy.signal()
            _ = gate.wait(timeout: .now() + 10)
        }
        XCTAssertEqual(loopBusy.wait(timeout: .now() + 10), .success)

        let returned = DispatchSemaphore(value: 0)
        let box = UncheckedSendable((client, replacement))
        Thread.detachNewThread {
            box.value.0.synchronouslySetDelegate(box.value.1)
            returned.signal()
        }
        // The loop is held: the call cannot have taken effect, so it must not have returned. (Waiting for
        // something not to happen needs a window; a correct socket passes however long it is.)
        XCTAssertEqual(returned.wait(timeout: .now() + .milliseconds(200)), .timedOut)
        XCTAssertTrue(client.delegate === replacement, "the getter sees the new delegate at once")
        gate.signal()
        XCTAssertEqual(returned.wait(timeout: .now() + 10), .success)
        XCTAssertTrue(try onLoop(client.eventLoop) { client.loopDelegate === replacement })

    }

    /// Connecting needs a delegate (GCDAsyncSocket's rule, FidelityTests); a socket whose delegate is
    /// gone afterwards goes on working.
    func testWithoutADelegateEverythingStillWorks() throws {
        let listener = try RawListener()
        let delegate = makeDelegate("gone")
        let client = makeSocket(delegate)
        try client.connect(toHost: "127.0.0.1", onPort: listener.port)
        let peer = try listener.accept()
        delegate.waitForConnect()
        client.delegate = nil
        client.write(Data("no delegate".utf8), withTimeout: -1, tag: 1)
        XCTAssertEqual(try peer.receive(exactly: 11), Data("no delegate".utf8))
        client.readData(withTimeout: 0.01, tag: 2)  // Times out with nobody to ask: the socket closes.
        let (_, end) = try peer.receiveToEnd()
        XCTAssertEqual(end, .eof)
        settle(client.eventLoop)
        XCTAssertTrue(client.isDisconnected)
    }

    func testDelegateIsHeldWeakly() throws {
        var delegate: RecordingDelegate? = RecordingDelegate("weak")
        weak let weakDelegate = delegate
        let client = makeSocket(delegate)
        delegate = nil
        XCTAssertNil(weakDelegate, "the socket does not keep its delegate alive")
        XCTAssertNil(client.delegate)
    }

    // MARK: The fast path

    func testInlineCallbacksAreNeverDeliveredInsideTheCallersOwnCall() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        try peer.send("ready")
        client.readData(toLength: 1, withTimeout: -1, tag: 0)
        delegate.waitForReadBytes(1, tag: 0)
        settle(client.eventLoop)  // "eady" now waits in the prebuffer.
        var readsDuringCall = -1
        perform(client) {
            client.readData(toLength: 4, withTimeout: -1, tag: 1)
            client.write(Data("w".utf8), withTimeout: -1, tag: 2)
            readsDuringCall = delegate.events.count
        }
        XCTAssertEqual(readsDuringCall, 2, "nothing was delivered from inside the calls")
        XCTAssertEqual(delegate.waitForReadBytes(4, tag: 1), Data("eady".utf8))
        XCTAssertTrue(delegate.records.allSatisfy(\.onLoop))
        XCTAssertTrue(delegate.records.allSatisfy { $0.queueTag == nil })
    }
}

/// Public methods may be called from any thread at the same time.
final class ThreadSafetyTests: SocketTestCase {
    override class var loopCount: Int { 2 }

    func testConcurrentWritersFromManyThreads() throws {
        let delegate = makeDelegate("client")
        let (client, peer) = try connectToRawPeer(delegate)
        let threads = 8
        let perThread = 200
        let writers = (0..<threads).map { t in
            onNewThread {
                for i in 0..<perThread {
                    client.write(Data(String(format: "[%02d:%04d]", t, i).utf8), withTimeout: -1, tag: t * perThread + i)
                    if i % 50 == 0 { _ = client.isConnected; _ = client.connectedPort; client.userData = i }
                }
            }
        }
        for writer in writers { try writer.waitOrThrow("a writer thread") }
        let received = try peer.receive(exactly: threads * perThread * 9)
        let text = String(decoding: received, as: UTF8.self)
        // Each write arrives whole, and each thread's writes keep their order.
        var next = Array(repeating: 0, count: threads)
        var index = text.startIndex
        while index < text.endIndex {
            let end = text.index(index, offsetBy: 9)
            let piece = text[index..<end]
            let t = Int(piece.dropFirst().prefix(2))!
            let i = Int(piece.dropFirst(4).prefix(4))!
            XCTAssertEqual(i, next[t], "thread \(t)'s writes in order")
            next[t] = i + 1
            index = end
        }
        XCTAssertEqual(next, Array(repeating: perThread, count: threads))
        delegate.wait("every write completed") { records in
            records.filter { if case .wrote = $0.event { return true } else { return false } }.count == threads * perThread
        }
    }

    func testConcurrentConnectsAndDisconnectsAcrossLoops() throws {
        let serverDelegate = makeDelegate("server")
        serverDelegate.echoAccepted()
        let server = try makeServer(serverDelegate)
        let count = 40
        let clientDelegate = makeDelegate("clients")
        let sockets = (0..<count).map { _ in makeSocket(clientDelegate) }
        DispatchQueue.concurrentPerform(iterations: count) { i in
            let sock = sockets[i]
            try? sock.connect(toHost: "127.0.0.1", onPort: server.localPort)
            sock.write(Data("c\(i % 10)".utf8), withTimeout: -1, tag: i)
            sock.readData(toLength: 2, withTimeout: -1, tag: i)
        }
        clientDelegate.waitForReadBytes(2 * count)
        DispatchQueue.concurrentPerform(iterations: count) { i in sockets[i].disconnect() }
        clientDelegate.wait("every disconnect") { records in records.filter { $0.event.isDisconnect }.count == count }
        for sock in sockets {
            XCTAssertEqual(clientDelegate.disconnects(of: sock).count, 1)
            XCTAssertEqual(clientDelegate.readBytes(of: sock).count, 2)
        }
    }
}

