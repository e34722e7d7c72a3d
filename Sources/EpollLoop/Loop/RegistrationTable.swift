/// The loop's watchers, indexed by file descriptor (an array, as libuv's `watchers`, not a dictionary).
///
/// Each slot carries a generation that changes on every registration and deregistration. The generation
/// travels with the fd in `epoll_event.data.u64`, so an event for a descriptor that was closed (and perhaps
/// reused) earlier in the same `epoll_wait` batch no longer matches and is dropped.
struct RegistrationTable {
    struct Slot {
        var handler: (any LoopIOHandler)?
        var interest: IOEvents = []
        var generation: UInt32 = 0
    }

    private(set) var slots: [Slot] = []
    /// Registered descriptors.
    private(set) var count = 0

    /// The handler for an event tagged (`fd`, `generation`), or `nil` if the event is stale.
    @inline(__always)
    func handler(fd: Int32, generation: UInt32) -> (any LoopIOHandler)? {
        let i = Int(fd)
        guard i >= 0, i < slots.count, slots[i].generation == generation else { return nil }
        return slots[i].handler
    }

    func isRegistered(_ fd: Int32) -> Bool {
        let i = Int(fd)
        return i >= 0 && i < slots.count && slots[i].handler != nil
    }

    func interest(of fd: Int32) -> IOEvents? {
        isRegistered(fd) ? slots[Int(fd)].interest : nil
    }

    /// Claims the slot for `fd`; returns the generation to tag its events with.
    mutating func add(_ fd: Int32, interest: IOEvents, handler: any LoopIOHandler) -> UInt32 {
        let i = Int(fd)
        if i >= slots.count {
            slots.append(contentsOf: repeatElement(Slot(), count: max(i + 1 - slots.count, slots.count)))
        }
        slots[i].generation &+= 1
        slots[i].handler = handler
        slots[i].interest = interest
        count += 1
        return slots[i].generation
    }

    mutating func setInterest(_ fd: Int32, _ interest: IOEvents) {
        slots[Int(fd)].interest = interest
    }

    mutating func setHandler(_ fd: Int32, _ handler: any LoopIOHandler) {
        slots[Int(fd)].handler = handler
    }

    func generation(of fd: Int32) -> UInt32 { slots[Int(fd)].generation }

    /// Frees the slot; events already fetched for it become stale. Returns the handler it held.
    @discardableResult
    mutating func remove(_ fd: Int32) -> (any LoopIOHandler)? {
        let i = Int(fd)
        let handler = slots[i].handler
        slots[i].handler = nil
        slots[i].interest = []
        slots[i].generation &+= 1
        count -= 1
        return handler
    }

    /// Every registered descriptor, lowest first.
    var registeredDescriptors: [Int32] {
        slots.indices.compactMap { slots[$0].handler == nil ? nil : Int32($0) }
    }
}
