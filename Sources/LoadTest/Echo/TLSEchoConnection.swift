import EpollLoop
import FoundationEssentials
import LoopSocket

/// Echo mode over TLS (`--tls`): the same messages as ``EchoConnection`` (sequence-numbered, checked byte for
/// byte), closed loop with `pipeline` in flight, but through GCDAsyncSocket and its TLS layer, since the raw
/// path talks to the kernel itself. Its own cost per request is therefore higher than the plaintext echo's;
/// compare TLS servers with each other, not with plaintext numbers.
final class TLSEchoConnection: SocketConnection {
    unowned(unsafe) let worker: LoopWorker
    private let phase: UInt32
    private let size: Int
    private let timeout: Double
    var socket: GCDAsyncSocket?
    var state = LoadConnectionState.idle
    private var nextSend: UInt64 = 0
    private var nextReply: UInt64 = 0
    /// When each message in flight was sent, oldest first (at most `pipeline`).
    private var sentAt: [UInt64] = []
    private var sentHead = 0
    private var message: Data

    init(worker: LoopWorker, number: Int) {
        self.worker = worker
        phase = Pattern.phase(of: number)
        size = worker.config.size
        timeout = worker.config.timeout > 0 ? worker.config.timeout : -1
        message = Data(count: worker.config.size)
    }

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        state = .open
        worker.connectionSettled(ok: true)
        // Queued behind the handshake: they leave once it completes.
        for _ in 0..<worker.config.pipeline { send(sock) }
    }

    private func send(_ sock: GCDAsyncSocket) {
        let sequence = nextSend
        nextSend += 1
        let phase = self.phase
        message.withUnsafeMutableBytes { Pattern.shared.fillMessage($0, sequence: sequence, phase: phase) }
        if sentHead > 64 && sentHead * 2 > sentAt.count {
            sentAt.removeFirst(sentHead)
            sentHead = 0
        }
        sentAt.append(Deadline.now().uptimeNanoseconds)
        sock.write(message, withTimeout: -1, tag: 0)
        sock.readData(toLength: UInt(size), withTimeout: timeout, tag: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        let now = Deadline.now().uptimeNanoseconds
        let sequence = nextReply
        nextReply += 1
        let phase = self.phase
        guard data.withUnsafeBytes({ Pattern.shared.checkMessage($0, sequence: sequence, phase: phase) }) else {
            worker.recordError(.mismatch, "echo reply \(sequence) did not match what was sent")
            sock.disconnect()
            return
        }
        let sent = sentAt[sentHead]
        sentHead += 1
        worker.recordReply(latency: now &- sent, bytes: size, now: now)
        if !worker.stopping { send(sock) }
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        ended(sock, error: err)
    }
}
