import Dispatch
import EpollLoop
import Foundation
import Glibc
import LoopSocket
import XCTest

/// A model test's failure: what differed from the reference model, and where.
struct UDPModelFailure: Error, CustomStringConvertible {
    var description: String
}

/// What GCDAsyncUdpSocket's semantics say the socket's delegate and the peer see after each step.
struct UDPReferenceModel {
    enum Receiving { case off, once, continuous, paused }

    var receiving = Receiving.off
    /// The receive filter drops odd ids.
    var receiveFilter = false
    /// The send filter drops tags that are multiples of 3 (reported as sent).
    var sendFilter = false
    /// Datagrams the peer sent that the socket has not taken yet (the kernel holds them).
    var pending: [Int] = []
    /// Ids the delegate is to receive, in order.
    var delivered: [Int] = []
    /// Ids the receive filter refuses, in order: the socket takes them, but no callback says so.
    var refused: [Int] = []
    /// How many datagrams the socket has taken from the kernel: delivered or refused.
    var taken: Int { delivered.count + refused.count }
    /// Each send's outcome by tag: nil for sent, or the error code.
    var outcomes: [Int: GCDAsyncUdpSocketError.Code?] = [:]
    /// Tags the peer is to receive, in order.
    var peerReceives: [Int] = []
    let setup: UDPModelScript.Setup

    init(setup: UDPModelScript.Setup) {
        self.setup = setup
    }

    /// Delivers what the kernel holds while the socket receives: a single receive takes the first datagram
    /// that passes the filter; a refused one is dropped and does not count.
    mutating func drain() {
        while (receiving == .once || receiving == .continuous) && !pending.isEmpty {
            let id = pending.removeFirst()
            if receiveFilter && id % 2 == 1 {
                refused.append(id)
                continue
            }
            delivered.append(id)
            if receiving == .once { receiving = .off }
        }
    }

    /// The outcome of one send (GCDAsyncUdpSocket's checks: size, then destination against the connection).
    mutating func send(_ send: UDPModelScript.Send, closing: Bool) {
        let size = max(2, send.size)
        if size > setup.maxSend {
            outcomes[send.tag] = .badParamError
        } else if closing {
            outcomes[send.tag] = .closedError
        } else if setup.connected != (send.destination == .connected) {
            outcomes[send.tag] = .badConfigError
        } else {
            outcomes[send.tag] = .some(nil)
            if !(sendFilter && send.tag % 3 == 0) { peerReceives.append(send.tag) }
        }
    }
}

/// Runs one ``UDPModelScript`` against a `GCDAsyncUdpSocket` and a raw peer (plain system calls), checking
/// the delegate's callbacks and the peer's datagrams against ``UDPReferenceModel`` after every step.
final class UDPModelRunner {
    let script: UDPModelScript
    let loop: EventLoop
    private var model: UDPReferenceModel
    private let recorder = UDPRecorder()
    private let queue = DispatchQueue(label: "udp-model-delegate")
    private let filterQueue = DispatchQueue(label: "udp-model-filter")
    private var socket: GCDAsyncUdpSocket!
    private var peer: Int32 = -1
    private var peerAddress = Data()
    private var socketAddress = Data()
    private var peerReceived: [Int] = []
    /// The ids the receive filter was asked about (on the loop or the filter queue).
    private let filtered = Locked<[Int]>([])
    /// The loop's count of datagrams read from the kernel before the peer sent any (only this case's
    /// socket receives on the loop).
    private var readBefore: UInt64 = 0
    private(set) var tally: [String: Int] = [:]

    init(_ script: UDPModelScript, loop: EventLoop) {
        self.script = script
        self.loop = loop
        self.model = UDPReferenceModel(setup: script.setup)
    }

    deinit {
        if peer >= 0 { Glibc.close(peer) }
    }

    private var host: String { script.setup.ipv6 ? "::1" : "127.0.0.1" }

    func run() throws {
        let setup = script.setup
        socket = GCDAsyncUdpSocket(delegate: recorder, delegateQueue: setup.queued ? queue : nil, loop: loop)
        defer { socket.close(); _ = recorder }
        socket.setMaxSendBufferSize(UInt16(setup.maxSend))
        try socket.bind(toPort: 0, interface: host)
        socketAddress = try XCTUnwrap(socket.localAddress())
        readBefore = datagramsRead
        try openPeer()
        if setup.connected {
            try socket.connect(toAddress: peerAddress)
            try expect(recorder.wait("connect") { $0.contains { if case .connected = $0 { return true } else { return false } } }, "connected")
        }
        var closed = false
        for (index, step) in script.steps.enumerated() {
            closed = try perform(step)
            try check(after: "step \(index) (\(step))")
        }
        if !closed {
            socket.close()
            try check(after: "close()")
        }
        try expectClosedLast()
    }

    // MARK: Steps

    /// Runs `step` on the socket and the model; true if it closed the socket.
    private func perform(_ step: UDPModelScript.Step) throws -> Bool {
        tally["\(step)".prefix { $0 != " " }.description, default: 0] += 1
        switch step {
        case .send(let sends):
            for send in sends {
                start(send)
                model.send(send, closing: false)
            }
        case .peerSends(let ids):
            for id in ids { try peerSend(id) }
            model.pending += ids
            model.drain()
        case .receiveOnce:
            try socket.receiveOnce()
            if model.receiving != .once { model.receiving = .once }
            model.drain()
        case .beginReceiving:
            try socket.beginReceiving()
            model.receiving = .continuous
            model.drain()
        case .pauseReceiving:
            socket.pauseReceiving()
            if model.receiving == .once || model.receiving == .continuous { model.receiving = .paused }
        case .receiveFilter(let place):
            socket.setReceiveFilter(place.map { _ in { [filtered] data, _, _ in
                let id = UDPModelScript.id(of: data)
                filtered.withLock { $0.append(id) }
                return id % 2 == 0
            } }, withQueue: place == .queue ? filterQueue : nil)
            model.receiveFilter = place != nil
        case .sendFilter(let place):
            socket.setSendFilter(place.map { _ in { _, _, tag in tag % 3 != 0 } }, withQueue: place == .queue ? filterQueue : nil)
            model.sendFilter = place != nil
        case .closeWithQueuedSends(let sends), .closeAfterSending(let sends):
            let immediately: Bool
            if case .closeWithQueuedSends = step { immediately = true } else { immediately = false }
            socket.perform {
                for send in sends { start(send) }
                if immediately { socket.close() } else { socket.closeAfterSending() }
            }
            for send in sends { model.send(send, closing: immediately) }
            return true
        }
        return false
    }

    private func start(_ send: UDPModelScript.Send) {
        let data = UDPModelScript.payload(id: send.tag, size: max(2, send.size))
        switch send.destination {
        case .address: socket.send(data, toAddress: peerAddress, withTimeout: send.timeout, tag: send.tag)
        case .host: socket.send(data, toHost: host, port: GCDAsyncUdpSocket.port(fromAddress: peerAddress), withTimeout: send.timeout, tag: send.tag)
        case .connected: socket.send(data, withTimeout: send.timeout, tag: send.tag)
        }
    }

    // MARK: Checking

    /// Waits (bounded) for the model's callbacks and the peer's datagrams, then compares them exactly.
    private func check(after what: String) throws {
        let receives = model.delivered.count, outcomes = model.outcomes.count
        _ = recorder.wait("\(receives) datagrams, \(outcomes) send outcomes after \(what)") { events in
            var r = 0, o = 0
            for event in events {
                switch event {
                case .received: r += 1
                case .sent, .notSent: o += 1
                default: break
                }
            }
            return r >= receives && o >= outcomes
        }
        // A refused datagram makes no callback, and the peer's `sendto` can return before the kernel has
        // queued its datagram to the socket (on a loaded machine loopback's receive side runs later, in
        // ksoftirqd), so the socket may not yet have read a datagram the model already refused. Wait
        // (bounded) until the socket has read from the kernel every datagram the model took: only then is a
        // refusal a fact, which a later step (the filter switched off, receiving resumed) cannot undo. The
        // engine filters a datagram with the filter in place when it was read.
        let deadline = DispatchTime.now() + .seconds(10)
        while datagramsRead &- readBefore < UInt64(model.taken) {
            guard DispatchTime.now() < deadline else {
                throw UDPModelFailure(description: "the socket read \(datagramsRead &- readBefore) datagrams, model took \(model.taken) after \(what)")
            }
            usleep(1_000)
        }
        // And the filter (nothing else) refused them: it was asked about each one.
        while !model.refused.allSatisfy({ id in
            filtered.withLock { seen in seen.filter { $0 == id }.count } >= model.refused.filter { $0 == id }.count
        }) {
            guard DispatchTime.now() < deadline else {
                throw UDPModelFailure(description: "the filter never saw \(model.refused) after \(what)")
            }
            usleep(1_000)
        }
        // Whatever the loop and the delegate queue hold by now is delivered before comparing.
        socket.perform {}
        queue.sync {}
        try expect(recorder.received.map(UDPModelScript.id(of:)) == model.delivered,
                   "received \(recorder.received.map(UDPModelScript.id(of:))), model \(model.delivered) after \(what); the filter saw \(filtered.withLock { $0 })")
        var seen: [Int: GCDAsyncUdpSocketError.Code?] = [:]
        var sentOrder: [Int] = []
        for event in recorder.events {
            switch event {
            case .sent(let tag): seen[tag] = .some(nil); sentOrder.append(tag)
            case .notSent(let tag, let error): seen[tag] = (error as? GCDAsyncUdpSocketError)?.code
            default: continue
            }
        }
        try expect(seen == model.outcomes, "send outcomes \(seen), model \(model.outcomes) after \(what)")
        try expect(sentOrder == sentOrder.sorted(), "sends reported out of order: \(sentOrder) after \(what)")
        try expect(recorder.receiveErrors.isEmpty, "receive errors \(recorder.receiveErrors) after \(what)")
        while peerReceived.count < model.peerReceives.count { peerReceived.append(try peerReceive()) }
        try expect(peerReceived == model.peerReceives, "peer received \(peerReceived), model \(model.peerReceives) after \(what)")
        tally["received", default: 0] = recorder.received.count
        tally["outcomes", default: 0] = seen.count
    }

    /// The datagrams the socket's loop has read from the kernel (its ``SocketCounts``), counted as each
    /// `recvmmsg` returns, before any is filtered or delivered.
    private var datagramsRead: UInt64 { loop.metrics.sockets.datagram.datagramsReceived }

    /// The close is reported once, last, and the peer got nothing more than the model said.
    private func expectClosedLast() throws {
        recorder.waitForClose()
        socket.perform {}
        queue.sync {}
        let events = recorder.events
        let closes = events.filter { if case .closed = $0 { return true } else { return false } }
        try expect(closes.count == 1, "closes reported: \(closes.count)")
        if case .closed(let error) = events.last {
            try expect(error == nil, "closed with \(String(describing: error))")
        } else {
            throw UDPModelFailure(description: "the close is not the last event: \(events.suffix(3))")
        }
        var buffer = [UInt8](repeating: 0, count: 2048)
        let extra = recv(peer, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        try expect(extra < 0, "the peer received a datagram the model did not send (id \(extra >= 2 ? Int(buffer[0]) << 8 | Int(buffer[1]) : -1))")
    }

    private func expect(_ condition: Bool, _ what: @autoclosure () -> String) throws {
        if !condition { throw UDPModelFailure(description: what()) }
    }

    // MARK: The raw peer

    private func openPeer() throws {
        let family = script.setup.ipv6 ? AF_INET6 : AF_INET
        peer = Glibc.socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        try expect(peer >= 0, "peer socket: errno \(errno)")
        var timeout = timeval(tv_sec: 10, tv_usec: 0)  // every wait bounded
        setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var storage = sockaddr_storage()
        var length: socklen_t
        if script.setup.ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr = in6addr_loopback
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in6.self) }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in.self) }
        }
        let bound = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(peer, $0, length) } }
        try expect(bound == 0, "peer bind: errno \(errno)")
        var full = length
        _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(peer, $0, &full) } }
        peerAddress = withUnsafeBytes(of: storage) { Data($0.prefix(Int(full))) }
    }

    private func peerSend(_ id: Int) throws {
        let data = UDPModelScript.payload(id: id, size: UDPModelScript.peerSize(id))
        let sent = data.withUnsafeBytes { bytes in
            socketAddress.withUnsafeBytes { address in
                sendto(peer, bytes.baseAddress, bytes.count, 0, address.baseAddress!.assumingMemoryBound(to: sockaddr.self),
                       socklen_t(address.count))
            }
        }
        try expect(sent == data.count, "peer sendto: \(sent), errno \(errno)")
    }

    private func peerReceive() throws -> Int {
        var buffer = [UInt8](repeating: 0, count: 2048)
        let count = recv(peer, &buffer, buffer.count, 0)
        try expect(count >= 2, "the peer waited 10 s for a datagram (model: \(model.peerReceives), got \(peerReceived))")
        let id = Int(buffer[0]) << 8 | Int(buffer[1])
        try expect(Data(buffer[0..<count]) == UDPModelScript.payload(id: id, size: count), "datagram \(id) arrived damaged")
        return id
    }
}
