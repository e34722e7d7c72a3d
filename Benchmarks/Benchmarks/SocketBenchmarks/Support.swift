import Benchmark
import Dispatch
import Glibc

/// Round trips per iteration.
let roundTrips = 10_000
/// The size of every message.
let messageSize = 64

/// Signalled by a client when its batch of round trips is done.
let batchDone = DispatchSemaphore(value: 0)

/// Per-round-trip figures of one iteration, in nanoseconds: wall time and the process's CPU time (all threads).
enum RoundTripMetric {
    static var wall: BenchmarkMetric {
        .custom("wall ns/round trip", polarity: .prefersSmaller, useScalingFactor: false)
    }
    static var cpu: BenchmarkMetric {
        .custom("process CPU ns/round trip", polarity: .prefersSmaller, useScalingFactor: false)
    }
}

struct RoundTripClock {
    var wall: UInt64
    var cpu: UInt64

    static func start() -> RoundTripClock {
        RoundTripClock(wall: nanoseconds(CLOCK_MONOTONIC), cpu: nanoseconds(CLOCK_PROCESS_CPUTIME_ID))
    }

    func report(to benchmark: Benchmark, roundTrips: Int) {
        let end = RoundTripClock.start()
        benchmark.measurement(RoundTripMetric.wall, Int((end.wall - wall) / UInt64(roundTrips)))
        benchmark.measurement(RoundTripMetric.cpu, Int((end.cpu - cpu) / UInt64(roundTrips)))
    }

    private static func nanoseconds(_ clock: clockid_t) -> UInt64 {
        var ts = timespec()
        clock_gettime(clock, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}

/// A connected blocking TCP client on the calling thread: write 64 bytes, read 64 bytes back, repeat.
/// It allocates nothing, so the mallocs of a run are the server's.
final class BlockingClient: @unchecked Sendable {
    let fd: Int32
    private let message: UnsafeMutableRawBufferPointer
    private let reply: UnsafeMutableRawBufferPointer

    init(port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0, "socket: errno \(errno)")
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        precondition(result == 0, "connect to 127.0.0.1:\(port): errno \(errno)")
        self.fd = fd
        message = .allocate(byteCount: messageSize, alignment: 8)
        message.initializeMemory(as: UInt8.self, repeating: 0x5A)
        reply = .allocate(byteCount: messageSize, alignment: 8)
    }

    func run(_ count: Int) {
        for _ in 0..<count {
            var sent = 0
            while sent < messageSize {
                let n = send(fd, message.baseAddress! + sent, messageSize - sent, Int32(MSG_NOSIGNAL))
                precondition(n > 0, "send: errno \(errno)")
                sent += n
            }
            var received = 0
            while received < messageSize {
                let n = recv(fd, reply.baseAddress! + received, messageSize - received, 0)
                precondition(n > 0, "recv: \(n), errno \(errno)")
                received += n
            }
        }
    }
}
