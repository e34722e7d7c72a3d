/// A hierarchical timing wheel: 6 levels of 64 slots at 1 ms resolution, covering about 2.2 years.
///
/// Owned by one event loop and never locked. The design follows tokio's and the Linux kernel's wheels:
/// - A timer is filed in the level whose slot width matches how far away its deadline is, and is moved down
///   a level ("cascaded") only when the wheel reaches its slot, so most timers, which are cancelled long
///   before they fire, are touched exactly twice: once to insert, once to cancel.
/// - Each level has a 64-bit occupancy bitmap, so the next slot to expire is found with a rotate and a
///   count of trailing zeros, never a scan.
/// - Timers are nodes in a slab (`nodes`) linked into their slot by index, found through a ``TimerID`` carrying
///   a generation: insert and cancel are O(1), a late cancel is harmless, and once the slab has grown nothing
///   is allocated per timer.
/// - Moving a deadline later only rewrites the deadline; the timer is re-filed when its old slot comes up
///   (the idle-timeout reset, which happens on every read of a busy connection).
///
/// Deadlines are nanoseconds on the monotonic clock, rounded up to a whole tick. A timer fires at the first
/// ``advance(to:)`` whose time is at or past that tick (never early; with a clock reading inside the tick it
/// waits for the tick), and timers that become due together fire in deadline order,
/// ties in the order they were scheduled.
package struct TimerWheel<Payload> {
    /// Nanoseconds per tick.
    package static var resolution: UInt64 { 1_000_000 }
    static var levelCount: Int { 6 }
    static var slotBits: UInt64 { 6 }
    static var slotCount: Int { 64 }
    /// Ticks the wheel spans; deadlines further out are filed at the horizon and re-filed when it comes up.
    static var horizon: UInt64 { 1 << (slotBits * UInt64(levelCount)) }

    struct Node {
        var deadline: UInt64
        var payload: Payload?
        var next: UInt32
        var prev: UInt32
        var generation: UInt32
        var sequence: UInt32
        /// `level * 64 + slot` while filed, or ``Location/ready`` / ``Location/free``.
        var location: UInt16
    }

    enum Location {
        static var ready: UInt16 { 0xFFFE }
        static var free: UInt16 { 0xFFFF }
    }

    struct ReadyEntry {
        var deadline: UInt64
        var sequence: UInt32
        var index: UInt32
        var generation: UInt32
    }

    static var none: UInt32 { .max }

    private var nodes: [Node] = []
    private var freeHead: UInt32 = none
    private var heads: [UInt32]
    private var tails: [UInt32]
    private var occupied: [UInt64]
    /// The wheel's current time in ticks since `origin`: every filed timer's slot lies after it.
    private var elapsed: UInt64 = 0
    private var nextSequence: UInt32 = 0
    private var ready: [ReadyEntry] = []
    private var readyCursor = 0
    /// ``nextExpiration()``'s last answer, kept while the wheel stays as it was: a loop asks twice per
    /// iteration (for the poll's timeout, then in ``advance(to:)``), and most iterations file, remove and
    /// expire nothing. Filing, unlinking or emptying a slot, and moving ``elapsed``, forget it.
    private var nextCache = NextCache.unknown

    private enum NextCache {
        case unknown
        case empty
        case at(location: Int, tick: UInt64)
    }

    /// The clock reading (ns) that tick 0 stands for.
    package let origin: UInt64
    /// Timers scheduled and neither fired nor cancelled.
    package private(set) var count = 0

    /// A wheel whose tick 0 is `origin` nanoseconds on the monotonic clock.
    package init(origin: UInt64) {
        self.origin = origin
        heads = Array(repeating: Self.none, count: Self.levelCount * Self.slotCount)
        tails = heads
        occupied = Array(repeating: 0, count: Self.levelCount)
    }

    /// Slab slots allocated so far (live and free): the wheel's memory is about 48 bytes times this.
    package var capacity: Int { nodes.count }

    // MARK: Public operations

    /// Files a timer for `deadline` (ns) carrying `payload`.
    package mutating func schedule(deadline: UInt64, payload: Payload) -> TimerID {
        let index: UInt32
        if freeHead != Self.none {
            index = freeHead
            freeHead = nodes[Int(index)].next
            nodes[Int(index)].deadline = deadline
            nodes[Int(index)].payload = payload
            nodes[Int(index)].sequence = nextSequence
        } else {
            precondition(nodes.count < Int(Self.none), "timer slab exhausted")
            index = UInt32(nodes.count)
            nodes.append(Node(deadline: deadline, payload: payload, next: Self.none, prev: Self.none,
                              generation: 0, sequence: nextSequence, location: Location.free))
        }
        nextSequence &+= 1
        count += 1
        link(index, tick: tick(for: deadline))
        return TimerID(index: index, generation: nodes[Int(index)].generation)
    }

    /// Cancels a timer; returns its payload, or `nil` if it already fired or was cancelled.
    @discardableResult
    package mutating func cancel(_ id: TimerID) -> Payload? {
        guard isLive(id) else { return nil }
        let i = Int(id.index)
        if nodes[i].location != Location.ready { unlink(id.index) }
        return release(id.index)
    }

    /// Moves a timer's deadline; returns false if it already fired or was cancelled.
    ///
    /// A later deadline is only written down (the timer is re-filed when its current slot expires); an
    /// earlier one re-files the timer at once.
    @discardableResult
    package mutating func reschedule(_ id: TimerID, deadline: UInt64) -> Bool {
        guard isLive(id) else { return false }
        let i = Int(id.index)
        let old = nodes[i].deadline
        nodes[i].deadline = deadline
        nodes[i].sequence = nextSequence
        nextSequence &+= 1
        if nodes[i].location == Location.ready {
            // Due in the batch being fired: take it out of the batch (its entry goes stale) and re-file it.
            link(id.index, tick: tick(for: deadline))
        } else if deadline < old {
            unlink(id.index)
            link(id.index, tick: tick(for: deadline))
        }
        return true
    }

    /// The deadline of a pending timer.
    package func deadline(of id: TimerID) -> UInt64? {
        isLive(id) ? nodes[Int(id.index)].deadline : nil
    }

    /// Whether `id` names a timer that has neither fired nor been cancelled.
    package func isLive(_ id: TimerID) -> Bool {
        let i = Int(id.index)
        return i < nodes.count && nodes[i].generation == id.generation && nodes[i].location != Location.free
    }

    /// The earliest time (ns) at which ``advance(to:)`` may have work: a timer fires then, or a slot cascades.
    /// `nil` when no timer is pending. Never later than the earliest deadline rounded up to its tick (for a
    /// deadline already past: never later than the wheel's current tick).
    package mutating func nextWakeup() -> UInt64? {
        if readyCursor < ready.count { return origin &+ elapsed &* Self.resolution }
        guard let (_, tick) = nextExpiration() else { return nil }
        let (offset, overflow) = tick.multipliedReportingOverflow(by: Self.resolution)
        if overflow { return .max }
        let (at, overflow2) = origin.addingReportingOverflow(offset)
        return overflow2 ? .max : at
    }

    /// Moves the wheel to `now` (ns): every timer whose deadline, rounded up to its tick, is at or before `now`
    /// becomes ready.
    /// Take them with ``popReady()``. Returns how many became ready.
    @discardableResult
    package mutating func advance(to now: UInt64) -> Int {
        let nowTick = now <= origin ? 0 : (now - origin) / Self.resolution
        let firstNew = ready.count
        while let (location, tick) = nextExpiration(), tick <= nowTick {
            if tick > elapsed { elapsed = tick }
            expire(location)
        }
        if nowTick > elapsed {
            elapsed = nowTick
            nextCache = .unknown
        }
        let newCount = ready.count - firstNew
        if newCount > 1 {
            ready[firstNew...].sort { a, b in
                a.deadline != b.deadline ? a.deadline < b.deadline
                    : Int32(bitPattern: a.sequence &- b.sequence) < 0
            }
        }
        return newCount
    }

    /// The payload of the next ready timer, in deadline order, releasing its node; `nil` when none is left.
    /// Timers cancelled or rescheduled after they became ready are skipped.
    package mutating func popReady() -> Payload? {
        while readyCursor < ready.count {
            let entry = ready[readyCursor]
            readyCursor += 1
            let i = Int(entry.index)
            if nodes[i].generation == entry.generation && nodes[i].location == Location.ready {
                return release(entry.index)
            }
        }
        // Most calls find nothing ready (a loop asks after every wakeup): an empty array is left as it is, since
        // `removeAll(keepingCapacity:)` is an out-of-line call even then.
        if readyCursor != 0 {
            ready.removeAll(keepingCapacity: true)
            readyCursor = 0
        }
        return nil
    }

    /// Cancels every timer (used at shutdown); their IDs go stale.
    package mutating func removeAll() {
        for i in nodes.indices where nodes[i].location != Location.free {
            if nodes[i].location != Location.ready { unlink(UInt32(i)) }
            _ = release(UInt32(i))
        }
        ready.removeAll(keepingCapacity: true)
        readyCursor = 0
        nextCache = .unknown
    }

    // MARK: Slots

    /// The first tick at or after `deadline` (ceiling), so that a timer never fires early.
    @inline(__always)
    private func tick(for deadline: UInt64) -> UInt64 {
        guard deadline > origin else { return 0 }
        let offset = deadline - origin
        return offset / Self.resolution + (offset % Self.resolution == 0 ? 0 : 1)
    }

    /// The level for a timer due at `when`: the level of the highest 6-bit digit in which it differs from now.
    @inline(__always)
    private static func level(elapsed: UInt64, when: UInt64) -> Int {
        var masked = (elapsed ^ when) | UInt64(slotCount - 1)
        if masked >= horizon { masked = horizon - 1 }
        let significant = 63 - masked.leadingZeroBitCount
        return significant / Int(slotBits)
    }

    private mutating func link(_ index: UInt32, tick: UInt64) {
        let location: Int
        if tick <= elapsed {
            location = Int(elapsed & UInt64(Self.slotCount - 1))
        } else {
            let when = min(tick, elapsed + Self.horizon - 1)
            let level = Self.level(elapsed: elapsed, when: when)
            location = level * Self.slotCount + Int((when >> (Self.slotBits * UInt64(level))) & 63)
        }
        nextCache = .unknown
        let i = Int(index)
        nodes[i].location = UInt16(location)
        nodes[i].next = Self.none
        let tail = tails[location]
        nodes[i].prev = tail
        if tail == Self.none {
            heads[location] = index
            occupied[location >> 6] |= 1 << UInt64(location & 63)
        } else {
            nodes[Int(tail)].next = index
        }
        tails[location] = index
    }

    private mutating func unlink(_ index: UInt32) {
        nextCache = .unknown
        let i = Int(index)
        let location = Int(nodes[i].location)
        let prev = nodes[i].prev
        let next = nodes[i].next
        if prev == Self.none { heads[location] = next } else { nodes[Int(prev)].next = next }
        if next == Self.none { tails[location] = prev } else { nodes[Int(next)].prev = prev }
        if heads[location] == Self.none { occupied[location >> 6] &= ~(1 << UInt64(location & 63)) }
    }

    private mutating func release(_ index: UInt32) -> Payload? {
        let i = Int(index)
        let payload = nodes[i].payload.take()
        nodes[i].generation &+= 1
        nodes[i].location = Location.free
        nodes[i].next = freeHead
        freeHead = index
        count -= 1
        return payload
    }

    /// The next occupied slot and the tick at which it expires, from ``nextCache`` when the wheel has not
    /// changed since it was last asked.
    private mutating func nextExpiration() -> (location: Int, tick: UInt64)? {
        switch nextCache {
        case .at(let location, let tick): return (location, tick)
        case .empty: return nil
        case .unknown: break
        }
        let found = findNextExpiration()
        nextCache = found.map { .at(location: $0.location, tick: $0.tick) } ?? .empty
        return found
    }

    /// The next occupied slot and the tick at which it expires, searched for. Lower levels always expire
    /// before higher ones (a level's timers lie inside the current slot of the level above), so the first
    /// hit wins.
    private func findNextExpiration() -> (location: Int, tick: UInt64)? {
        for level in 0..<Self.levelCount {
            let bits = occupied[level]
            if bits == 0 { continue }
            let shift = Self.slotBits * UInt64(level)
            let nowSlot = Int((elapsed >> shift) & 63)
            // The top level's current slot holds only timers a full turn away (filed at the horizon), so it is
            // searched last there; below the top, the current slot is empty or holds timers due now.
            let first = level == Self.levelCount - 1 ? (nowSlot + 1) & 63 : nowSlot
            let rotated = bits.rotatedRight(by: first)
            let slot = (rotated.trailingZeroBitCount + first) & 63
            let slotRange: UInt64 = 1 << shift
            let levelRange = slotRange << Self.slotBits
            let levelStart = elapsed & ~(levelRange - 1)
            var tick = levelStart + UInt64(slot) * slotRange
            if level == 0 {
                if tick < elapsed { tick = elapsed }
            } else if tick <= elapsed {
                tick += levelRange  // the slot lies past the wrap of this level (only at the horizon)
            }
            return (level * Self.slotCount + slot, tick)
        }
        return nil
    }

    /// Empties the slot at `location` (the wheel has reached it): due timers become ready, the rest are re-filed lower.
    private mutating func expire(_ location: Int) {
        nextCache = .unknown
        var index = heads[location]
        heads[location] = Self.none
        tails[location] = Self.none
        occupied[location >> 6] &= ~(1 << UInt64(location & 63))
        while index != Self.none {
            let i = Int(index)
            let next = nodes[i].next
            let due = tick(for: nodes[i].deadline)
            if due <= elapsed {
                nodes[i].location = Location.ready
                ready.append(ReadyEntry(deadline: nodes[i].deadline, sequence: nodes[i].sequence,
                                        index: index, generation: nodes[i].generation))
            } else {
                link(index, tick: due)
            }
            index = next
        }
    }
}

extension UInt64 {
    @inline(__always)
    fileprivate func rotatedRight(by n: Int) -> UInt64 {
        n == 0 ? self : (self >> UInt64(n)) | (self << UInt64(64 - n))
    }
}
