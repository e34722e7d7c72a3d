import EpollLoop
import Glibc

/// What the sockets of one event loop share: the receive buffer every read lands in first (a socket owns
/// memory only for bytes it holds for its user), iovec scratch space for gathered writes, the reserve
/// descriptor that lets accept survive `EMFILE`, and the list of sockets whose pump was deferred to the
/// next loop iteration. Loop-confined; one per loop, kept in `EventLoop.attachment`.
final class LoopContext {
    /// Bytes read per `recv`: large enough to drain a busy socket in few calls.
    static let receiveBufferSize = 64 * 1024
    /// Write operations gathered into one `sendmsg`.
    static let maxGather = 64

    unowned let loop: EventLoop
    let receiveBuffer: UnsafeMutableRawBufferPointer
    let iovecs: UnsafeMutablePointer<iovec>
    /// `/dev/null`, opened ahead of need: closed to make room for one `accept` when the fd table is full.
    @exclusivity(unchecked) var reserveFD: Int32
    @exclusivity(unchecked) private var deferredPumps: [GCDAsyncSocket] = []
    @exclusivity(unchecked) private var spareDeferredPumps: [GCDAsyncSocket] = []

    private init(loop: EventLoop) {
        self.loop = loop
        receiveBuffer = .allocate(byteCount: Self.receiveBufferSize, alignment: 16)
        iovecs = .allocate(capacity: Self.maxGather)
        reserveFD = (try? Syscall.openDevNull()) ?? -1
    }

    deinit {
        receiveBuffer.deallocate()
        iovecs.deallocate()
        if reserveFD >= 0 { try? Syscall.close(reserveFD) }
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
    func deferPump(_ socket: GCDAsyncSocket) {
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
