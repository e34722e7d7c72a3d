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
    /// Work asked for while the pump was held (``hold()``) is done by this pump's first round.
    @inline(__always)
    mutating func begin() -> Bool {
        guard !contains(.pumping) else {
            insert(.again)
            return false
        }
        insert(.pumping)
        remove(.again)
        return true
    }

    /// The transition at the bottom of each round: whether work queued during it asks for another.
    @inline(__always)
    mutating func goAgain() -> Bool {
        remove(.again) != nil
    }

    /// The transition when the pump returns.
    @inline(__always)
    mutating func end() {
        remove([.pumping, .again])
    }

    /// Holds the pump while callbacks run outside one (a received batch): work they queue waits for the
    /// pump the caller runs next instead of deferring one. Returns what ``release(_:)`` needs.
    @inline(__always)
    mutating func hold() -> Bool {
        let wasPumping = contains(.pumping)
        insert(.pumping)
        return wasPumping
    }

    /// Ends a ``hold()``.
    @inline(__always)
    mutating func release(_ wasPumping: Bool) {
        if !wasPumping { remove(.pumping) }
    }
}

/// A socket whose pump is scheduled by ``PumpState``, as ``LoopContext`` defers it.
///
/// The hot transitions are called by each engine on its own stored `PumpState` (`requestPump()`, the loop
/// header of `pump()`): through this protocol, an open class's field is reached by a witness call per
/// access, measurable per echoed round trip. Only the deferred pump's turn, once per loop iteration at
/// most, goes through it.
protocol PumpScheduled: LoopPinned {
    /// Loop only.
    var pumpState: PumpState { get set }
    /// Runs the socket's queued work. Loop only.
    func pump()
}

extension PumpScheduled {
    /// The deferred pump's turn (``LoopContext`` calls it once per deferral). Loop only.
    func runDeferredPump() {
        pumpState.remove(.deferred)
        pump()
    }
}
