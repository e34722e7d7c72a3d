/// How a socket's pump is scheduled, for both engines (``ConnectionEngine``, ``DatagramEngine``): one
/// implementation of the rule that keeps callbacks out of the caller's own call and off a growing stack.
///
/// A pump is one iterative pass over the work a socket has queued, delivering callbacks from inside it. A
/// call into the socket made while a pump is on the stack (from a callback) only queues work and asks the
/// running pump to go round again, so chained callbacks never recurse. A call made on the loop outside a
/// pump defers it to the next loop iteration (once, however often it is asked: ``LoopContext/deferPump(_:)``),
/// so a callback is never delivered from inside the caller's own call, except for sockets that pump
/// ``PumpState/inline`` (their sink never re-enters the caller).
struct PumpState: OptionSet {
    let rawValue: UInt8
    /// A pump is running on the stack: calls into the socket only queue work.
    static let pumping = PumpState(rawValue: 1 << 0)
    /// Work was queued during the pump: run it again.
    static let again = PumpState(rawValue: 1 << 1)
    /// A pump is scheduled for the next loop iteration.
    static let deferred = PumpState(rawValue: 1 << 2)
    /// Calls from outside a callback pump at once instead of deferring to the next iteration (sockets
    /// behind an ``AsyncSocket``, whose sink never re-enters the caller).
    static let inline = PumpState(rawValue: 1 << 3)

    /// What a request for a pump leads to.
    enum Request {
        /// The running pump goes round again, or one is already deferred.
        case joined
        /// Pump now (an inline socket outside a pump).
        case pumpNow
        /// Defer a pump to the next loop iteration.
        case deferPump
    }

    /// The transition for "work was queued: pump it".
    @inline(__always)
    mutating func request() -> Request {
        if contains(.pumping) {
            insert(.again)
            return .joined
        }
        if contains(.inline) { return .pumpNow }
        if contains(.deferred) { return .joined }
        insert(.deferred)
        return .deferPump
    }

    /// The transition for starting a pump: false if one is already on the stack (it goes round again).
    @inline(__always)
    mutating func begin() -> Bool {
        guard !contains(.pumping) else {
            insert(.again)
            return false
        }
        insert(.pumping)
        return true
    }
}

/// A loop-confined socket whose work runs in a pump scheduled by ``PumpState``.
protocol PumpScheduled: LoopPinned {
    /// Loop only.
    var pumpState: PumpState { get set }
    /// Runs the socket's queued work (built on ``runPump(_:)``). Loop only.
    func pump()
}

extension PumpScheduled {
    /// Asks for a pump: the running one goes round again, or one is deferred to the next iteration (or, for
    /// an ``PumpState/inline`` socket, runs now: its work reaches the kernel within the call). Loop only.
    @inline(__always)
    func requestPump() {
        switch pumpState.request() {
        case .joined: break
        case .pumpNow: pump()
        case .deferPump: context.deferPump(self)
        }
    }

    /// The deferred pump's turn (``LoopContext`` calls it once per deferral). Loop only.
    func runDeferredPump() {
        pumpState.remove(.deferred)
        pump()
    }

    /// The pump's loop header: runs `round` again while work is queued during it (until `round` returns
    /// false: the socket closed). False, running nothing, if a pump is already on the stack: that one goes
    /// round again.
    @inline(__always)
    func runPump(_ round: () -> Bool) -> Bool {
        guard pumpState.begin() else { return false }
        repeat {
            pumpState.remove(.again)
            guard round() else { break }
        } while pumpState.contains(.again)
        pumpState.remove([.pumping, .again])
        return true
    }

    /// Runs `body` (which delivers callbacks) as if a pump were on the stack: work the callbacks queue waits
    /// for the pump the caller runs next, instead of deferring one.
    @inline(__always)
    func holdingPump<T>(_ body: () -> T) -> T {
        let wasPumping = pumpState.contains(.pumping)
        pumpState.insert(.pumping)
        defer { if !wasPumping { pumpState.remove(.pumping) } }
        return body()
    }
}
