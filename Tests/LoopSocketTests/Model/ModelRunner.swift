import Dispatch
import Foundation
import LoopSocket
import XCTest

/// A case that failed: what the model or the runner found.
struct ModelFailure: Error, CustomStringConvertible {
    let description: String
}

/// Runs one script: makes the connection, performs each step against the socket under test and its peer,
/// feeds everything to the ``SocketReferenceModel`` and stops at the first thing it rejects. Every wait is
/// bounded by ``waitLimit``.
final class ModelRunner {
    /// A step that waits gives up after this long: far beyond what any step needs, even under
    /// ThreadSanitizer on a loaded machine, so that only a hang reaches it.
    static let waitLimit: TimeInterval = 30

    private let test: SocketTestCase
    private let script: ModelScript
    private let changes = ModelChanges()
    private let model = SocketReferenceModel()
    private let sutDelegate: ModelDelegate
    private let peerDelegate: ModelDelegate
    private let queue: DispatchQueue?
    private var sut: GCDAsyncSocket?
    private var peerSocket: GCDAsyncSocket?
    private var rawPeer: RawPeerPump?
    private var directory: TempDirectory?
    private var sutEvents = 0
    private var peerEvents = 0
    private var rawReceived = 0
    private var stepIndex = -1
    private let sutTLS: TLSConfiguration
    private let peerTLS: TLSConfiguration

    init(_ script: ModelScript, test: SocketTestCase, serverTLS: TLSConfiguration, clientTLS: TLSConfiguration) {
        self.script = script
        self.test = test
        sutDelegate = ModelDelegate(changes)
        peerDelegate = ModelDelegate(changes)
        queue = script.setup.delegateQueue ? DispatchQueue(label: "model-delegate") : nil
        sutTLS = script.setup.sutIsTLSServer ? serverTLS : clientTLS
        peerTLS = script.setup.sutIsTLSServer ? clientTLS : serverTLS
    }

    /// Callbacks of each kind the case's model accepted.
    var tally: [String: Int] { model.tally }

    /// Runs the script; throws the first failure. Always cleans up, so a failed case leaves no descriptor.
    func run() throws {
        defer { cleanUp() }
        try connect()
        for (index, step) in script.steps.enumerated() {
            stepIndex = index
            try perform(step)
            absorb()
            try check()
        }
    }

    // MARK: The connection

    private var sutOptions: SocketOptions {
        var options = SocketOptions()
        options.maxReadsPerWakeup = script.setup.maxReadsPerWakeup
        if script.setup.smallWaterMarks {
            options.writeHighWaterMark = 4 * 1024
            options.writeLowWaterMark = 1024
        }
        return options
    }

    private func connect() throws {
        let setup = script.setup
        var url: URL?
        if setup.transport == .unix {
            let directory = try TempDirectory()
            self.directory = directory
            url = URL(fileURLWithPath: directory.file("model.sock"))
        }
        if !setup.peerIsSocket && !setup.sutAccepts {
            let listener = try RawListener()
            defer { listener.close() }
            let sut = makeSocket(sutDelegate, queue: queue, options: sutOptions)
            try sut.connect(toHost: "127.0.0.1", onPort: listener.port, withTimeout: testTimeout)
            rawPeer = try RawPeerPump(try listener.accept(), tcp: true, changes: changes)
            self.sut = sut
            try awaitConnected(sut, delegate: sutDelegate)
            sutEvents = 1
            return
        }
        // A GCDAsyncSocket listens (the socket under test's side or the peer's) and the other side connects.
        let listenerIsSut = setup.sutAccepts
        let listenerDelegate = listenerIsSut ? sutDelegate : peerDelegate
        let listener = makeSocket(listenerDelegate, queue: listenerIsSut ? queue : nil, options: listenerIsSut ? sutOptions : SocketOptions())
        if let url { try listener.accept(on: url) } else { try listener.accept(onInterface: "127.0.0.1", port: 0) }
        var client: GCDAsyncSocket?
        if setup.peerIsSocket || !listenerIsSut {
            let clientDelegate = listenerIsSut ? peerDelegate : sutDelegate
            let socket = makeSocket(clientDelegate, queue: listenerIsSut ? nil : queue, options: listenerIsSut ? SocketOptions() : sutOptions)
            if let url { try socket.connect(to: url, withTimeout: testTimeout) } else {
                try socket.connect(toHost: "127.0.0.1", onPort: listener.localPort, withTimeout: testTimeout)
            }
            try awaitConnected(socket, delegate: clientDelegate)
            client = socket
        } else if let url {
            rawPeer = try RawPeerPump(try RawSocket(connectToUnixPath: url.path), tcp: false, changes: changes)
        } else {
            rawPeer = try RawPeerPump(try RawSocket(connectTo: "127.0.0.1", port: listener.localPort), tcp: true, changes: changes)
        }
        try waitUntil("the connection to be accepted", checking: false) { !listenerDelegate.accepted(by: listener).isEmpty }
        let accepted = listenerDelegate.accepted(by: listener)[0]
        listener.disconnect()
        try waitUntil("the listener to close", checking: false) {
            listenerDelegate.events(of: ObjectIdentifier(listener), from: 0).contains { $0.isDisconnect }
        }
        if listenerIsSut {
            sut = accepted
            peerSocket = client
        } else {
            sut = client
            peerSocket = accepted
            sutEvents = 1
        }
        if let peer = peerSocket {
            // The peer stays open for writing when the socket under test shuts its write side.
            peer.autoDisconnectOnClosedReadStream = false
            // The setter reaches the loop in a task: an end of stream handled before it would still close.
            _ = try test.onLoop(peer.eventLoop) {}
            peerEvents = peer === client ? 1 : 0
        }
    }

    private func makeSocket(_ delegate: ModelDelegate, queue: DispatchQueue?, options: SocketOptions) -> GCDAsyncSocket {
        let socket = test.makeSocket(delegate, queue: queue)
        socket.options = options
        return socket
    }

    private func awaitConnected(_ socket: GCDAsyncSocket, delegate: ModelDelegate) throws {
        try waitUntil("the connection", checking: false) {
            delegate.events(of: ObjectIdentifier(socket), from: 0).contains {
                if case .connected = $0 { return true }
                if case .connectedURL = $0 { return true }
                return false
            }
        }
    }

    private func cleanUp() {
        sut?.disconnect()
        peerSocket?.disconnect()
        rawPeer?.stop()
        // Both sockets' last callbacks have run (on their loops or the delegate queue) before the next case.
        for (socket, delegate) in [(sut, sutDelegate), (peerSocket, peerDelegate)] {
            guard let socket else { continue }
            _ = try? waitUntil("socketDidDisconnect at clean-up", checking: false) {
                delegate.events(of: ObjectIdentifier(socket), from: 0).contains { $0.isDisconnect }
            }
        }
        if let queue {
            let drained = Signal()
            queue.async { drained.fire() }
            drained.wait()
        }
        sutDelegate.reset()
        peerDelegate.reset()
        directory?.remove()
    }

    // MARK: Steps

    private func perform(_ step: ModelStep) throws {
        switch step {
        case .turn(let calls):
            let prepared = calls.map { ($0, buffer(for: $0)) }
            for (call, buffer) in prepared { model.issue(call, buffer: buffer) }
            let sut = try socketUnderTest()
            let box = UncheckedSendableBox(prepared)
            _ = try test.onLoop(sut.eventLoop) { [self] in
                for (call, buffer) in box.value { make(call, buffer: buffer, on: sut) }
            }
        case .call(let call):
            let buffer = buffer(for: call)
            model.issue(call, buffer: buffer)
            make(call, buffer: buffer, on: try socketUnderTest())
        case .peer(let action):
            perform(action)
        case .drain(let after, let segmentEnd, let tag):
            try waitUntil("available read tag \(after)") { model.streamOffset(afterRead: after) != nil }
            let rest = segmentEnd - model.streamOffset(afterRead: after)!
            guard rest >= 0 else { throw failure("available read tag \(after) took \(-rest) bytes past its segment") }
            if rest > 0 {
                let call = ModelCall.read(ModelRead(kind: .length(rest), tag: tag, timeout: -1))
                model.issue(call)
                make(call, buffer: nil, on: try socketUnderTest())
            }
        case .sync:
            try waitUntil("every queued operation to complete") { model.isSettled }
        case .expectClose(let rule):
            model.expectClose(rule)
        case .awaitClose:
            try waitUntil("the close") { model.isClosed(rawPeer: rawPeer != nil) }
            model.checkPeerEnd()
        case .timeoutReplies(let replies):
            sutDelegate.setTimeoutReplies(replies)
        }
    }

    private func socketUnderTest() throws -> GCDAsyncSocket {
        guard let sut else { throw failure("no socket under test") }
        return sut
    }

    private func perform(_ action: PeerAction) {
        switch action {
        case .send(let data):
            model.peerSent(data)
            rawPeer?.send(data)
            peerSocket?.write(data, withTimeout: -1, tag: 1)
        case .receive(let count):
            peerSocket?.readData(toLength: UInt(count), withTimeout: -1, tag: 2)
        case .receiveContinuously:
            peerSocket?.beginReceiving(tag: 3)
        case .startTLS:
            peerSocket?.startTLS(peerTLS)
        case .shutdownWrite:
            rawPeer?.shutdownWrite()
            peerSocket?.closeWriteStream()
        }
    }

    /// The caller's buffer of a buffer variant, made here so the model can look into it afterwards.
    private func buffer(for call: ModelCall) -> NSMutableData? {
        guard case .read(let read) = call, case .buffer(let prefill, _) = read.buffer else { return nil }
        return NSMutableData(data: prefill)
    }

    /// Makes `call` on `sut` with the API the script names.
    private func make(_ call: ModelCall, buffer: NSMutableData?, on sut: GCDAsyncSocket) {
        switch call {
        case .read(let read):
            makeRead(read, buffer: buffer, on: sut)
        case .write(let data, let tag, let timeout):
            sut.write(data, withTimeout: timeout, tag: tag)
        case .startTLS:
            sut.startTLS(sutTLS)
        case .closeWriteStream:
            sut.closeWriteStream()
        case .disconnect:
            sut.disconnect()
        case .disconnectAfterReading:
            sut.disconnectAfterReading()
        case .disconnectAfterWriting:
            sut.disconnectAfterWriting()
        case .disconnectAfterReadingAndWriting:
            sut.disconnectAfterReadingAndWriting()
        }
    }

    private func makeRead(_ read: ModelRead, buffer: NSMutableData?, on sut: GCDAsyncSocket) {
        let (tag, timeout) = (read.tag, read.timeout)
        var offset: UInt = 0
        switch read.buffer {
        case .none:
            switch read.kind {
            case .available: sut.readData(withTimeout: timeout, tag: tag)
            case .length(let n): sut.readData(toLength: UInt(n), withTimeout: timeout, tag: tag)
            case .separator(let sep, 0): sut.readData(to: sep, withTimeout: timeout, tag: tag)
            case .separator(let sep, let max): sut.readData(to: sep, withTimeout: timeout, maxLength: UInt(max), tag: tag)
            }
            return
        case .nilBuffer:
            break
        case .buffer(_, let at):
            offset = UInt(at)
        }
        switch read.kind {
        case .available(0):
            sut.readData(withTimeout: timeout, buffer: buffer, bufferOffset: offset, tag: tag)
        case .available(let max):
            sut.readData(withTimeout: timeout, buffer: buffer, bufferOffset: offset, maxLength: UInt(max), tag: tag)
        case .length(let n):
            sut.readData(toLength: UInt(n), withTimeout: timeout, buffer: buffer, bufferOffset: offset, tag: tag)
        case .separator(let sep, 0):
            sut.readData(to: sep, withTimeout: timeout, buffer: buffer, bufferOffset: offset, tag: tag)
        case .separator(let sep, let max):
            sut.readData(to: sep, withTimeout: timeout, buffer: buffer, bufferOffset: offset, maxLength: UInt(max), tag: tag)
        }
    }

    // MARK: Observing

    /// Hands the model every callback and received byte that arrived since the last call.
    private func absorb() {
        if let sut {
            let events = sutDelegate.events(of: ObjectIdentifier(sut), from: sutEvents)
            sutEvents += events.count
            for event in events { model.observe(event) }
        }
        if let peer = peerSocket {
            let events = peerDelegate.events(of: ObjectIdentifier(peer), from: peerEvents)
            peerEvents += events.count
            for event in events { observePeer(event) }
        }
        if let rawPeer {
            let (bytes, end, sendError) = rawPeer.received(from: rawReceived)
            rawReceived += bytes.count
            model.peerGot(bytes)
            if let end { model.peerEnded(end) }
            if let sendError, !model.closeExpected { model.fail("the raw peer's send failed with errno \(sendError)") }
        }
    }

    /// The peer socket is checked for what it received, and for failing while the connection should be up.
    private func observePeer(_ event: SocketEvent) {
        model.note("peer event \(event)")
        switch event {
        case .read(let data, _):
            model.peerGot(data)
        case .disconnected, .failedWrite, .failedRead, .shouldTimeoutRead, .shouldTimeoutWrite:
            if !model.closeExpected { model.fail("peer: unexpected \(event)") }
        default:
            break
        }
    }

    private func check() throws {
        if let message = model.failure { throw failure(message) }
    }

    private func failure(_ message: String) -> ModelFailure {
        let step = script.steps.indices.contains(stepIndex) ? "\(script.steps[stepIndex])" : "connecting"
        return ModelFailure(description: "at step \(stepIndex) (\(step)): \(message)")
    }

    /// Waits (bounded) until `condition` holds, absorbing callbacks and bytes as they come; fails fast when
    /// the model rejects one.
    private func waitUntil(_ what: String, checking: Bool = true, _ condition: () -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: Self.waitLimit)
        while true {
            let seen = changes.current
            if checking {
                absorb()
                try check()
            }
            if condition() { return }
            if Date() >= deadline {
                model.fail("timed out after \(Int(Self.waitLimit)) s waiting for \(what)")
                throw failure(model.failure!)
            }
            changes.wait(after: seen, until: deadline)
        }
    }
}

/// Carries the prepared calls (with their `NSMutableData` buffers) into the loop task that makes them; the
/// test thread does not touch them until their callbacks arrive.
struct UncheckedSendableBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
