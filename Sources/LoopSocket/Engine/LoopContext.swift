import EpollLoop
import FoundationEssentials
import Glibc

/// What the sockets of one event loop share: the receive buffer every read lands in first (a socket owns
/// memory only for bytes it holds for its user), iovec scratch space for gathered writes, the reserve
/// descriptor that lets accept survive `EMFILE`, and the list of sockets whose pump was deferred to the
/// next loop iteration. Loop-confined; one per loop, kept in `EventLoop.attachment`.
final class LoopContext {
    /// Bytes read per `recv`: large enough to drain a busy socket in few calls.
    static let receiveBufferSize = 64 * 1024
    /// A `recv` at least this long that one read takes whole is delivered in the receive buffer itself
    /// (shrunk to size) instead of a copy, and the loop takes a new buffer: below it, copying is cheaper.
    static let handOffThreshold = 8 * 1024
    /// Write operations gathered into one `sendmsg`.
    static let maxGather = 64

    unowned let loop: EventLoop
    /// From `malloc`, as it may be handed to a `Data` that frees it.
    @exclusivity(unchecked) private(set) var receiveBuffer: UnsafeMutableRawBufferPointer
    let iovecs: UnsafeMutablePointer<iovec>
    /// `/dev/null`, opened ahead of need: closed to make room for one `accept` when the fd table is full.
    @exclusivity(unchecked) var reserveFD: Int32
    @exclusivity(unchecked) private var deferredPumps: [any PumpScheduled] = []
    @exclusivity(unchecked) private var spareDeferredPumps: [any PumpScheduled] = []
    /// Where TLS connections decrypt into (one record, at most 16 KiB, per `SSL_read`); made on first use.
    @exclusivity(unchecked) private var plaintextBuffer: UnsafeMutableRawBufferPointer?
    /// The `recvmmsg`/`sendmmsg` scratch space of the loop's UDP sockets, made on first use.
    @exclusivity(unchecked) var datagramScratch: DatagramScratch?

    private init(loop: EventLoop) {
        self.loop = loop
        receiveBuffer = Self.allocateReceiveBuffer()
        iovecs = .allocate(capacity: Self.maxGather)
        reserveFD = (try? Syscall.openDevNull()) ?? -1
    }

    deinit {
        plaintextBuffer?.deallocate()
        free(receiveBuffer.baseAddress)
        iovecs.deallocate()
        if reserveFD >= 0 { LibraryFault.close(reserveFD) }
    }

    private static func allocateReceiveBuffer() -> UnsafeMutableRawBufferPointer {
        guard let base = malloc(receiveBufferSize) else { fatalError("LoopSocket: out of memory for a receive buffer") }
        return UnsafeMutableRawBufferPointer(start: base, count: receiveBufferSize)
    }

    /// The first `count` bytes of the receive buffer as a `Data` that owns them, without copying: the buffer
    /// is shrunk to `count` bytes (in place) and handed over, and a new one takes its place. For large reads,
    /// where the copy out of the buffer cost more than the allocation (7.7% of a streaming server's CPU).
    func handOffReceiveBuffer(count: Int) -> Data {
        let base = receiveBuffer.baseAddress!
        let owned = realloc(base, count) ?? base
        receiveBuffer = Self.allocateReceiveBuffer()
        return Data(bytesNoCopy: owned, count: count, deallocator: .free)
    }

    /// The buffer TLS connections decrypt into.
    var tlsPlaintextBuffer: UnsafeMutableRawBufferPointer {
        if let plaintextBuffer { return plaintextBuffer }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)
        plaintextBuffer = buffer
        return buffer
    }

    /// The context of `loop`, created on first use. Call on the loop.
    static func of(_ loop: EventLoop) -> LoopContext {
        if let context = loop.attachment {
            return unsafeDowncast(context, to: LoopContext.self)
        }
        let context = LoopContext(loop: loop)
        loop.attachment = context
        return context
    }

    /// Runs `socket.pump()` in the next loop iteration (once, however often it is asked). Callbacks are
    /// never delivered from inside the user's own call into the socket.
    func deferPump(_ socket: any PumpScheduled) {
        if deferredPumps.isEmpty {
            loop.executeOnLoop { [self] in runDeferredPumps() }
        }
        deferredPumps.append(socket)
    }

    private func runDeferredPumps() {
        swap(&deferredPumps, &spareDeferredPumps)
        for socket in spareDeferredPumps { socket.runDeferredPump() }
        spareDeferredPumps.removeAll(keepingCapacity: true)
    }
}

/// Carries a value that is not `Sendable` to a thread where it is used exclusively (a delegate into its queue).
struct UncheckedSendable<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
