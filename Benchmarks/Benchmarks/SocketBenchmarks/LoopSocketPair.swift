import Dispatch
import EpollLoop
import FoundationEssentials
import LoopSocket

/// The echo-server's delegate: read whatever arrives, write it straight back. Keeps the accepted sockets
/// (GCDAsyncSocket's contract: the delegate owns them).
final class EchoServerDelegate: GCDAsyncSocketDelegate, @unchecked Sendable {
    var accepted: [GCDAsyncSocket] = []

    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        accepted.append(newSocket)
        newSocket.readData(withTimeout: -1, tag: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        sock.write(data, withTimeout: -1, tag: 0)
        sock.readData(withTimeout: -1, tag: 0)
    }
}

/// A ping-pong client: write 64 bytes, read exactly 64 back, repeat; all on its loop.
final class PingClient: GCDAsyncSocketDelegate, @unchecked Sendable {
    let socket: GCDAsyncSocket
    let connected = DispatchSemaphore(value: 0)
    private let payload = Data(repeating: 0x5A, count: messageSize)
    private var remaining = 0

    init(loop: EpollLoop.EventLoop) {
        socket = GCDAsyncSocket(delegate: nil, delegateQueue: nil, loop: loop)
        socket.delegate = self
    }

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        connected.signal()
    }

    /// On the loop.
    func start(_ count: Int) {
        remaining = count
        send()
    }

    private func send() {
        socket.write(payload, withTimeout: -1, tag: 0)
        socket.readData(toLength: UInt(messageSize), withTimeout: -1, tag: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        precondition(data.count == messageSize)
        remaining -= 1
        if remaining == 0 {
            batchDone.signal()
        } else {
            send()
        }
    }
}

/// A LoopSocket echo server and client on the same single loop.
final class LoopSocketPair: @unchecked Sendable {
    let group: EpollLoop.EventLoopGroup
    let serverDelegate = EchoServerDelegate()
    let listener: GCDAsyncSocket
    let client: PingClient

    init() {
        do {
            group = try EpollLoop.EventLoopGroup(numberOfLoops: 1, name: "bench-socket")
            listener = GCDAsyncSocket(delegate: serverDelegate, delegateQueue: nil, loop: group.loops[0], group: group)
            try listener.accept(onInterface: "127.0.0.1", port: 0)
            client = PingClient(loop: group.loops[0])
            try client.socket.connect(toHost: "127.0.0.1", onPort: listener.localPort)
        } catch {
            fatalError("LoopSocket pair: \(error)")
        }
        client.connected.wait()
    }

    /// Runs `count` round trips and returns when they are done.
    func run(_ count: Int) {
        let client = self.client
        try! group.loops[0].execute { client.start(count) }
        batchDone.wait()
    }
}

/// A LoopSocket echo server on its own loop, driven by a blocking client on the benchmark thread.
final class LoopSocketServerOnly: @unchecked Sendable {
    let group: EpollLoop.EventLoopGroup
    let serverDelegate = EchoServerDelegate()
    let listener: GCDAsyncSocket
    let client: BlockingClient

    init() {
        do {
            group = try EpollLoop.EventLoopGroup(numberOfLoops: 1, name: "bench-socket-server")
            listener = GCDAsyncSocket(delegate: serverDelegate, delegateQueue: nil, loop: group.loops[0], group: group)
            try listener.accept(onInterface: "127.0.0.1", port: 0)
        } catch {
            fatalError("LoopSocket server: \(error)")
        }
        client = BlockingClient(port: Int(listener.localPort))
    }
}

let epollPair = LoopSocketPair()
let epollRawPair = LoopSocketServerOnly()
