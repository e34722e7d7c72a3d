// udp-gso: what UDP segmentation offload saves a sender of runs to one peer. A GCDAsyncUdpSocket on one loop
// keeps runs of equal datagrams queued to one loopback receiver (a plain socket a thread drains with recv),
// with segmentation offload off and on alternately, and prints the process's CPU time (sender and receiver
// together) per datagram for each, and how many the receiver got.
//
//     swift run -c release udp-gso [--size 1200] [--run 64] [--seconds 3] [--rounds 3]
//
// With offload on, each run of `--run` datagrams leaves as one UDP_SEGMENT message: the stack below the
// socket is walked once per run instead of once per datagram (loopback cuts it back into datagrams at the
// receiving socket, as a NIC with segmentation offload would on the wire).
import Dispatch
import FoundationEssentials
import Glibc
import LoopSocket
import EpollLoop
import Synchronization

struct Options {
    var size = 1_200
    var run = 64
    var seconds = 3.0
    var rounds = 3

    init(_ arguments: [String]) {
        var i = 0
        while i + 1 < arguments.count {
            let value = arguments[i + 1]
            switch arguments[i] {
            case "--size": size = Int(value) ?? size
            case "--run": run = Int(value) ?? run
            case "--seconds": seconds = Double(value) ?? seconds
            case "--rounds": rounds = Int(value) ?? rounds
            default: fatalError("udp-gso: unknown option \(arguments[i])")
            }
            i += 2
        }
    }
}

/// Queues a run, and the next when the last datagram of one is reported sent, until the deadline.
final class Blaster: GCDAsyncUdpSocketDelegate, @unchecked Sendable {
    let payload: Data
    let run: Int
    let port: UInt16
    let deadline: DispatchTime
    var sent = 0
    var failed = 0
    let done = DispatchSemaphore(value: 0)

    init(payload: Data, run: Int, port: UInt16, deadline: DispatchTime) {
        self.payload = payload
        self.run = run
        self.port = port
        self.deadline = deadline
    }

    func queueRun(_ socket: GCDAsyncUdpSocket) {
        for _ in 0..<run { socket.send(payload, toHost: "127.0.0.1", port: port, withTimeout: -1, tag: 0) }
    }

    func udpSocket(_ sock: GCDAsyncUdpSocket, didSendDataWithTag tag: Int) { finished(sock) }

    func udpSocket(_ sock: GCDAsyncUdpSocket, didNotSendDataWithTag tag: Int, dueToError error: (any Error)?) {
        failed += 1
        finished(sock)
    }

    private func finished(_ socket: GCDAsyncUdpSocket) {
        sent += 1
        guard sent % run == 0 else { return }
        if DispatchTime.now() < deadline { queueRun(socket) } else { done.signal() }
    }
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// A UDP socket bound to 127.0.0.1 (4 MiB receive buffer); its port.
func makeSink() -> (Int32, UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    var buffer: Int32 = 4 << 20
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return (fd, UInt16(bigEndian: address.sin_port))
}

let options = Options(Array(CommandLine.arguments.dropFirst()))
let group = try EventLoopGroup(numberOfLoops: 1, name: "udp-gso")
let (sink, port) = makeSink()
/// Datagrams the receiver thread got; it stops when the socket is shut down.
let received = Atomic<Int>(0)
let receiverDone = DispatchSemaphore(value: 0)
DispatchQueue.global().async {
    var bytes = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = recv(sink, &bytes, bytes.count, 0)
        if n > 0 { received.add(1, ordering: .relaxed) } else if n == 0 || errno != EINTR { break }
    }
    receiverDone.signal()
}
print("udp-gso: runs of \(options.run) datagrams of \(options.size) bytes to one loopback socket, \(options.seconds) s per measurement")
for round in 1...options.rounds {
    for offload in [false, true] {
        let blaster = Blaster(payload: Data(repeating: 0x5A, count: options.size), run: options.run, port: port,
                              deadline: .now() + options.seconds)
        let socket = GCDAsyncUdpSocket(delegate: blaster, delegateQueue: nil, loop: group.loops[0])
        socket.setSegmentationOffloadEnabled(offload)
        try socket.bind(toPort: 0, interface: "127.0.0.1")
        let before = cpuSeconds()
        let receivedBefore = received.load(ordering: .relaxed)
        let start = DispatchTime.now()
        socket.perform { blaster.queueRun(socket) }
        blaster.done.wait()
        let cpu = cpuSeconds() - before
        let wall = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        socket.close()
        let got = received.load(ordering: .relaxed) - receivedBefore  // those still queued count in the next
        let perDatagram = cpu * 1e6 / Double(blaster.sent)
        let line = "round \(round) offload \(offload ? "on " : "off"): \(blaster.sent) datagrams (\(blaster.failed) failed, \(got) received), "
            + "\(Int(Double(blaster.sent) / wall)) per second, \((perDatagram * 1000).rounded() / 1000) µs CPU per datagram"
        print(line)
    }
}
shutdown(sink, Int32(SHUT_RDWR))
receiverDone.wait()
close(sink)
try group.shutdownGracefully(timeout: .seconds(5))
