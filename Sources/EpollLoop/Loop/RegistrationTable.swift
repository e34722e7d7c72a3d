import Glibc

/// The loop's watchers, indexed by file descriptor (an array, as libuv's `watchers`, not a dictionary).
///
/// Each slot carries a generation that changes on every registration and deregistration. The generation
/// travels with the fd in `epoll_event.data.u64`, so an event for a descriptor that was closed (and perhaps
/// reused) earlier in the same `epoll_wait` batch no longer matches and is dropped.
///
/// The loop calls a handler without retaining it (``dispatchTarget(fd:generation:)``), so a handler the table
/// drops while the loop is dispatching (a socket closing itself from its own `handleIO`, a connect attempt
/// handing its descriptor on) is not released at once: it waits in ``retired`` until the handler call under
/// way returns (``EventLoop/releaseRetiredHandlers()``), the moment the retain the loop no longer makes would
/// have been released. One dropped by a task the batch runs between two events waits for the next call, or
/// for the end of the batch.
///
/// Raw storage, grown by doubling, whose slots are initialised only up to the highest descriptor seen
/// (`count` below): a grown table's new half is address space, not memory, until descriptors reach it. A
/// Swift array had to initialise every slot it grew by, and a server holding 10,000 connections paid for
/// the 16,384 slots of the doubled table (39 bytes per connection of resident memory instead of the 24 of
/// its own slot; `loadgen idle`, docs/benchmarks.md). Large tables come from `mmap` (glibc's threshold),
/// whose pages stay untouched until written.
struct RegistrationTable: ~Copyable {
    struct Slot {
        var handler: (any LoopIOHandler)?
        var interest: IOEvents = []
        var generation: UInt32 = 0
    }

    /// Never nil (allocated at once, 64 slots): the lookups per event test no optional.
    private var slots: UnsafeMutablePointer<Slot>
    /// Slots allocated.
    private var capacity: Int
    /// Slots initialised: every descriptor below it has one (empty or registered).
    private(set) var slotCount = 0
    /// Registered descriptors.
    private(set) var count = 0
    /// Whether the loop is dispatching a batch: handlers dropped meanwhile go to ``retired``.
    var isDispatching = false
    /// The handler dropped while dispatching, released once the handler being called has returned. One
    /// handler call rarely drops more than its own registration; any further ones wait in ``moreRetired``.
    var retired: (any LoopIOHandler)?
    /// Handlers dropped during the same call after ``retired``, released with it.
    var moreRetired: [any LoopIOHandler] = []

    init() {
        capacity = 64
        slots = Self.allocate(capacity)
    }

    deinit {
        slots.deinitialize(count: slotCount)
        free(slots)
    }

    private static func allocate(_ count: Int) -> UnsafeMutablePointer<Slot> {
        guard let raw = malloc(MemoryLayout<Slot>.stride * count) else { fatalError("out of memory") }
        return raw.bindMemory(to: Slot.self, capacity: count)
    }

    /// The handler for an event tagged (`fd`, `generation`), or `nil` if the event is stale.
    @inline(__always)
    func handler(fd: Int32, generation: UInt32) -> (any LoopIOHandler)? {
        let i = Int(fd)
        guard i >= 0, i < slotCount, slots[i].generation == generation else { return nil }
        return slots[i].handler
    }

    /// ``handler(fd:generation:)`` as its type and its address, for a call through
    /// ``LoopIOHandler/handleIO(unretained:_:)`` that retains nothing. Only while ``isDispatching``: the table
    /// then keeps what it drops alive until the loop releases it.
    @inline(__always)
    func dispatchTarget(fd: Int32, generation: UInt32)
        -> (type: any LoopIOHandler.Type, object: UnsafeMutableRawPointer)? {
        guard let handler = handler(fd: fd, generation: generation) else { return nil }
        return (type(of: handler), Unmanaged<AnyObject>.passUnretained(handler).toOpaque())
    }

    func isRegistered(_ fd: Int32) -> Bool {
        let i = Int(fd)
        return i >= 0 && i < slotCount && slots[i].handler != nil
    }

    func interest(of fd: Int32) -> IOEvents? {
        isRegistered(fd) ? slots[Int(fd)].interest : nil
    }

    /// Claims the slot for `fd`; returns the generation to tag its events with.
    mutating func add(_ fd: Int32, interest: IOEvents, handler: any LoopIOHandler) -> UInt32 {
        let i = Int(fd)
        if i >= slotCount { extend(to: i + 1) }
        let slot = slots + i
        slot.pointee.generation &+= 1
        slot.pointee.handler = handler
        slot.pointee.interest = interest
        count += 1
        return slot.pointee.generation
    }

    /// Initialises empty slots up to `newCount`, growing the storage (doubling) when it is too small.
    private mutating func extend(to newCount: Int) {
        if newCount > capacity {
            let newCapacity = Swift.max(newCount, capacity * 2)
            let grown = Self.allocate(newCapacity)
            grown.moveInitialize(from: slots, count: slotCount)
            free(slots)
            slots = grown
            capacity = newCapacity
        }
        (slots + slotCount).initialize(repeating: Slot(), count: newCount - slotCount)
        slotCount = newCount
    }

    mutating func setInterest(_ fd: Int32, _ interest: IOEvents) {
        slots[Int(fd)].interest = interest
    }

    mutating func setHandler(_ fd: Int32, _ handler: any LoopIOHandler) {
        let old = slots[Int(fd)].handler.take()
        slots[Int(fd)].handler = handler
        if isDispatching, let old { retire(old) }
    }

    func generation(of fd: Int32) -> UInt32 { slots[Int(fd)].generation }

    /// Frees the slot; events already fetched for it become stale.
    mutating func remove(_ fd: Int32) {
        let slot = slots + Int(fd)
        let handler = slot.pointee.handler.take()
        slot.pointee.interest = []
        slot.pointee.generation &+= 1
        count -= 1
        if isDispatching, let handler { retire(handler) }
    }

    private mutating func retire(_ handler: consuming any LoopIOHandler) {
        if retired == nil {
            retired = handler
        } else {
            moreRetired.append(handler)
        }
    }

    /// Whether a handler dropped while dispatching is waiting to be released (``moreRetired`` holds some only
    /// when ``retired`` does).
    var hasRetired: Bool { retired != nil }

    /// Every registered descriptor, lowest first.
    var registeredDescriptors: [Int32] {
        (0..<slotCount).compactMap { slots[$0].handler == nil ? nil : Int32($0) }
    }
}
