import XCTest

@testable import EpollLoop

/// Long randomized runs comparing `TimerWheel` with a sorted-array reference model, driven by a manual clock.
///
/// Each run is a seeded sequence of schedule / cancel / reschedule (earlier and later) / stale-ID operations
/// and advances (zero, sub-millisecond, seconds, days, and jumps past the 2^36 ms horizon), with deadlines in
/// the past, at now, near tick and level boundaries, beyond the horizon and near `UInt64.max`. While a batch
/// is being popped the run also cancels, reschedules and schedules timers, as loop callbacks do.
///
/// Properties checked after every operation:
/// - nothing fires early: a timer popped after `advance(to: now)` has `deadline <= now`;
/// - everything due fires at that advance: exactly the timers whose deadline, rounded up to the wheel's
///   1 ms tick, is at or before `now` (in the millisecond-aligned runs that is literally `deadline <= now`);
/// - fire order within an advance is by deadline, then by (re)scheduling order;
/// - cancelled timers never fire; stale IDs (after fire or cancel, and after slot reuse) change nothing;
/// - `count` matches the model; the slab never grows beyond the peak number of live timers;
/// - `nextWakeup()` is never later than the earliest pending deadline (rounded up to the tick) or now.
final class TimerWheelModelTests: XCTestCase {
    func testRandomizedAgainstReferenceModelMillisecondAligned() {
        for seed: UInt64 in [1, 2, 0x5EED, 0xC0FFEE] {
            runModel(seed: seed, aligned: true, steps: 25_000)
        }
    }

    func testRandomizedAgainstReferenceModelNanosecondDeadlines() {
        for seed: UInt64 in [7, 42, 0xDEAD_BEEF, 0x1234_5678_9ABC] {
            runModel(seed: seed, aligned: false, steps: 25_000)
        }
    }

    private func runModel(seed: UInt64, aligned: Bool, steps: Int, file: StaticString = #filePath, line: UInt = #line) {
        var run = ModelRun(seed: seed, aligned: aligned)
        do {
            for _ in 0..<steps { try run.step() }
            try run.drainEverything()
        } catch {
            XCTFail("\(error)", file: file, line: line)
            return
        }
        // The run must have exercised what it claims to test, or it proves nothing.
        let s = run.stats
        let context = "seed \(seed), aligned \(aligned): \(s)"
        XCTAssertGreaterThan(s.fired, 2_000, context, file: file, line: line)
        XCTAssertGreaterThan(s.cancelled, 1_000, context, file: file, line: line)
        XCTAssertGreaterThan(s.rescheduledEarlier, 500, context, file: file, line: line)
        XCTAssertGreaterThan(s.rescheduledLater, 500, context, file: file, line: line)
        XCTAssertGreaterThan(s.staleOperations, 500, context, file: file, line: line)
        XCTAssertGreaterThan(s.hugeJumps, 5, context, file: file, line: line)
        XCTAssertGreaterThan(s.firedBeyondHorizon, 20, context, file: file, line: line)
        XCTAssertGreaterThan(s.firedFromThePast, 100, context, file: file, line: line)
        XCTAssertGreaterThan(s.batchesOfSeveral, 100, context, file: file, line: line)
        XCTAssertGreaterThan(s.cancelledInBatch, 20, context, file: file, line: line)
        XCTAssertGreaterThan(s.rescheduledInBatch, 20, context, file: file, line: line)
        XCTAssertGreaterThan(s.scheduledDuringPop, 20, context, file: file, line: line)
    }
}

/// A violated property, with what is needed to replay it.
private struct ModelViolation: Error, CustomStringConvertible {
    let description: String
}

private let ms: UInt64 = 1_000_000
/// The wheel's horizon in nanoseconds: 2^36 ticks of 1 ms.
private let horizonNanos: UInt64 = (1 << 36) * ms

@inline(__always)
private func saturatingAdd(_ a: UInt64, _ b: UInt64) -> UInt64 {
    let (sum, overflow) = a.addingReportingOverflow(b)
    return overflow ? .max : sum
}

/// The reference model: pending timers in an array sorted by (deadline, sequence), which is the fire order.
private struct ReferenceTimers {
    struct Entry {
        var deadline: UInt64
        var sequence: Int
        var payload: Int
        var id: TimerID
    }

    private(set) var sorted: [Entry] = []
    private var byPayload: [Int: Entry] = [:]

    var count: Int { sorted.count }

    func entry(_ payload: Int) -> Entry? { byPayload[payload] }

    /// The first index whose key is not less than (deadline, sequence).
    private func position(_ deadline: UInt64, _ sequence: Int) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            let e = sorted[mid]
            if e.deadline < deadline || (e.deadline == deadline && e.sequence < sequence) {
                low = mid + 1
            } else {
                high = mid
            }
        }
        return low
    }

    mutating func insert(_ entry: Entry) {
        sorted.insert(entry, at: position(entry.deadline, entry.sequence))
        byPayload[entry.payload] = entry
    }

    @discardableResult
    mutating func remove(_ payload: Int) -> Entry? {
        guard let entry = byPayload.removeValue(forKey: payload) else { return nil }
        let i = position(entry.deadline, entry.sequence)
        precondition(sorted[i].payload == payload, "reference model corrupted")
        sorted.remove(at: i)
        return entry
    }
}

private struct ModelStats: CustomStringConvertible {
    var fired = 0
    var cancelled = 0
    var rescheduledEarlier = 0
    var rescheduledLater = 0
    var staleOperations = 0
    var hugeJumps = 0
    var firedBeyondHorizon = 0
    var firedFromThePast = 0
    var batchesOfSeveral = 0
    var cancelledInBatch = 0
    var rescheduledInBatch = 0
    var scheduledDuringPop = 0

    var description: String {
        "fired \(fired), cancelled \(cancelled), rescheduled earlier \(rescheduledEarlier) / later \(rescheduledLater), "
            + "stale ops \(staleOperations), huge jumps \(hugeJumps), fired beyond horizon \(firedBeyondHorizon), "
            + "fired from the past \(firedFromThePast), batches > 1 \(batchesOfSeveral), in-batch cancels "
            + "\(cancelledInBatch) / reschedules \(rescheduledInBatch), scheduled during pop \(scheduledDuringPop)"
    }
}

private struct ModelRun {
    let seed: UInt64
    let aligned: Bool
    let origin: UInt64
    var rng: SplitMix64
    var wheel: TimerWheel<Int>
    var model = ReferenceTimers()
    var now: UInt64
    var nextPayload = 0
    var nextSequence = 0
    /// Scheduling time of each pending timer (to recognise deadlines that were already past or beyond the horizon).
    var scheduledAt: [Int: UInt64] = [:]
    var staleIDs: [TimerID] = []
    var peak = 0
    var stepNumber = 0
    var stats = ModelStats()

    init(seed: UInt64, aligned: Bool) {
        self.seed = seed
        self.aligned = aligned
        var rng = SplitMix64(seed: seed)
        // An arbitrary origin, not a whole number of milliseconds, as the monotonic clock gives.
        origin = 5_000_000_000 + rng.below(ms)
        self.rng = rng
        wheel = TimerWheel(origin: origin)
        now = origin
    }

    func violation(_ message: String) -> ModelViolation {
        ModelViolation(description: "seed \(seed) (aligned \(aligned)), step \(stepNumber), now \(now): \(message)")
    }

    /// The wheel's tick for a deadline: rounded up, so that nothing fires early.
    func ceilTick(_ deadline: UInt64) -> UInt64 {
        guard deadline > origin else { return 0 }
        let offset = deadline - origin
        return offset / ms + (offset % ms == 0 ? 0 : 1)
    }

    func floorTick(_ time: UInt64) -> UInt64 { time <= origin ? 0 : (time - origin) / ms }

    /// The deadline rounded up to its tick: the time at which it becomes due for the wheel.
    func dueTime(_ deadline: UInt64) -> UInt64 {
        let (offset, overflow) = ceilTick(deadline).multipliedReportingOverflow(by: ms)
        return overflow ? .max : saturatingAdd(origin, offset)
    }

    func align(_ time: UInt64) -> UInt64 {
        guard aligned, time > origin else { return time }
        return origin + (time - origin) / ms * ms
    }

    mutating func randomDeadline() -> UInt64 {
        let nowTick = floorTick(now)
        let deadline: UInt64
        switch rng.below(100) {
        case 0..<10:  // in the past
            deadline = now - min(now, rng.below(10_000 * ms))
        case 10..<13:  // before the wheel's origin
            deadline = rng.below(origin + 1)
        case 13..<18:
            deadline = now
        case 18..<45:  // a few ticks away
            deadline = now + rng.below(5 * ms)
        case 45..<63:
            deadline = now + rng.below(10_000 * ms)
        case 63..<72:  // the upper levels: up to ~100 days
            deadline = now + rng.below((1 << 33) * ms)
        case 72..<82:  // around the next boundary of some level
            let shift = UInt64(6 * (1 + rng.below(6)))
            let boundary = ((nowTick >> shift) + 1) << shift
            deadline = origin + boundary * ms - 3 * ms + rng.below(6 * ms)
        case 82..<86:  // around the horizon
            deadline = now + horizonNanos - 3 * ms + rng.below(6 * ms)
        case 86..<92:  // beyond the horizon: due after the next huge jump
            deadline = now + horizonNanos + rng.below((1 << 35) * ms)
        case 92..<95:  // several horizons away
            deadline = now + horizonNanos + rng.below((1 << 38) * ms)
        default:  // practically never
            deadline = .max - rng.below(1_000 * ms)
        }
        return align(deadline)
    }

    mutating func randomStep() -> UInt64 {
        let step: UInt64
        switch rng.below(1000) {
        case 0..<50: step = 0
        case 50..<600: step = 1 + rng.below(3 * ms)
        case 600..<850: step = rng.below(100 * ms)
        case 850..<960: step = rng.below(60_000 * ms)
        case 960..<985: step = rng.below((1 << 32) * ms)  // up to ~50 days
        default:
            // Past the horizon; the clock stays far from overflow.
            guard now < (1 << 63) else { return ms }
            stats.hugeJumps += 1
            step = horizonNanos + rng.below(horizonNanos)
        }
        return aligned ? step / ms * ms : step
    }

    // MARK: Operations

    mutating func step() throws {
        stepNumber += 1
        let roll = rng.below(100)
        if model.count == 0 || (roll < 32 && model.count < 600) {
            try schedule()
        } else if roll < 45 {
            try cancelRandom(inBatch: nil)
        } else if roll < 60 {
            try rescheduleRandom(inBatch: nil)
        } else if roll < 66 {
            try staleOperation()
        } else {
            try advance(to: now + randomStep())
        }
        try checkInvariants()
    }

    mutating func schedule() throws {
        let deadline = randomDeadline()
        let payload = nextPayload
        nextPayload += 1
        let id = wheel.schedule(deadline: deadline, payload: payload)
        model.insert(.init(deadline: deadline, sequence: nextSequence, payload: payload, id: id))
        nextSequence += 1
        scheduledAt[payload] = now
        peak = max(peak, model.count)
        guard wheel.isLive(id), wheel.deadline(of: id) == deadline else {
            throw violation("a freshly scheduled timer is not live with its deadline")
        }
    }

    /// Cancels a random pending timer (one of `batch`, when given); returns its payload.
    @discardableResult
    mutating func cancelRandom(inBatch batch: [Int]?) throws -> Int? {
        let payload: Int
        if let batch {
            guard !batch.isEmpty else { return nil }
            payload = batch[rng.index(batch.count)]
        } else {
            guard model.count > 0 else { return nil }
            payload = model.sorted[rng.index(model.count)].payload
        }
        let entry = model.remove(payload)!
        scheduledAt[payload] = nil
        let returned = wheel.cancel(entry.id)
        guard returned == payload else {
            throw violation("cancel(\(entry.id)) of timer \(payload) returned \(String(describing: returned))")
        }
        stats.cancelled += 1
        retire(entry.id)
        return payload
    }

    /// Moves a random pending timer (one of `batch`, when given) earlier or later; returns its payload.
    @discardableResult
    mutating func rescheduleRandom(inBatch batch: [Int]?) throws -> Int? {
        let payload: Int
        if let batch {
            guard !batch.isEmpty else { return nil }
            payload = batch[rng.index(batch.count)]
        } else {
            guard model.count > 0 else { return nil }
            payload = model.sorted[rng.index(model.count)].payload
        }
        var entry = model.remove(payload)!
        let old = entry.deadline
        // Half the time a small move either way, which keeps a lazily-moved timer in its old slot.
        let deadline: UInt64
        if rng.chance(50) {
            deadline = randomDeadline()
        } else if rng.chance(50) {
            deadline = align(saturatingAdd(old, rng.below(3 * ms)))
        } else {
            deadline = align(old - min(old, rng.below(3 * ms)))
        }
        guard wheel.reschedule(entry.id, deadline: deadline) else {
            throw violation("reschedule(\(entry.id)) of live timer \(payload) returned false")
        }
        if deadline < old { stats.rescheduledEarlier += 1 } else { stats.rescheduledLater += 1 }
        entry.deadline = deadline
        entry.sequence = nextSequence
        nextSequence += 1
        model.insert(entry)
        scheduledAt[payload] = now
        return payload
    }

    /// A cancel, reschedule or query through an ID whose timer fired or was cancelled (its slot perhaps reused).
    mutating func staleOperation() throws {
        guard !staleIDs.isEmpty else { return }
        let id = staleIDs[rng.index(staleIDs.count)]
        stats.staleOperations += 1
        guard !wheel.isLive(id), wheel.deadline(of: id) == nil else {
            throw violation("stale ID \(id) is reported live")
        }
        switch rng.below(3) {
        case 0:
            if let payload = wheel.cancel(id) { throw violation("cancel of stale ID \(id) returned \(payload)") }
        case 1:
            if wheel.reschedule(id, deadline: randomDeadline()) { throw violation("reschedule of stale ID \(id) succeeded") }
        default:
            if wheel.reschedule(id, deadline: 0) { throw violation("reschedule of stale ID \(id) to 0 succeeded") }
        }
    }

    mutating func retire(_ id: TimerID) {
        if staleIDs.count < 512 {
            staleIDs.append(id)
        } else {
            staleIDs[rng.index(staleIDs.count)] = id
        }
    }

    /// Advances the wheel to `target` and pops the batch, mutating timers between pops.
    mutating func advance(to target: UInt64) throws {
        let targetTick = floorTick(target)
        let dueCount = model.sorted.prefix { ceilTick($0.deadline) <= targetTick }.count
        if aligned {
            // With a millisecond-aligned clock the tick rounding is invisible: due means deadline <= now.
            let literal = model.sorted.prefix { $0.deadline <= target }.count
            if literal != dueCount { throw violation("model: \(literal) timers at or before now, \(dueCount) due") }
        }
        // The batch, in the order it must fire: by deadline, then by (re)scheduling order.
        var batch = model.sorted[0..<dueCount].map(\.payload)
        let became = wheel.advance(to: target)
        now = target
        guard became == batch.count else {
            throw violation("advance made \(became) timers ready, \(batch.count) are due")
        }
        if batch.count > 1 { stats.batchesOfSeveral += 1 }
        while true {
            // What a timer callback may do in the middle of a batch.
            if rng.chance(12) {
                switch rng.below(6) {
                case 0:
                    if let p = try cancelRandom(inBatch: batch) {
                        batch.removeAll { $0 == p }
                        stats.cancelledInBatch += 1
                    }
                case 1:
                    // Rescheduled out of the batch: it fires at a later advance, even if its new deadline is past.
                    if let p = try rescheduleRandom(inBatch: batch) {
                        batch.removeAll { $0 == p }
                        stats.rescheduledInBatch += 1
                    }
                case 2:
                    try schedule()
                    stats.scheduledDuringPop += 1
                case 3:
                    let outside = model.sorted.filter { !batch.contains($0.payload) }.map(\.payload)
                    try cancelRandom(inBatch: outside)
                case 4:
                    try staleOperation()
                default:
                    let outside = model.sorted.filter { !batch.contains($0.payload) }.map(\.payload)
                    try rescheduleRandom(inBatch: outside)
                }
            }
            guard let popped = wheel.popReady() else { break }
            guard let expected = batch.first else {
                throw violation("popReady returned timer \(popped) after the batch was exhausted")
            }
            guard popped == expected else {
                let got = model.entry(popped).map { "deadline \($0.deadline) seq \($0.sequence)" } ?? "not pending"
                let want = model.entry(expected).map { "deadline \($0.deadline) seq \($0.sequence)" } ?? "?"
                throw violation("popReady returned \(popped) (\(got)), expected \(expected) (\(want))")
            }
            batch.removeFirst()
            let entry = model.remove(popped)!
            guard entry.deadline <= now else {
                throw violation("timer \(popped) fired early: deadline \(entry.deadline) > now \(now)")
            }
            stats.fired += 1
            if let at = scheduledAt.removeValue(forKey: popped) {
                if entry.deadline <= at { stats.firedFromThePast += 1 }
                if entry.deadline > at && entry.deadline - at >= horizonNanos { stats.firedBeyondHorizon += 1 }
            }
            if wheel.isLive(entry.id) { throw violation("timer \(popped) still live after it fired") }
            retire(entry.id)
        }
        guard batch.isEmpty else {
            throw violation("due timers \(batch.prefix(8)) did not fire at now \(now)")
        }
        if let extra = wheel.popReady() { throw violation("popReady returned \(extra) after returning nil") }
    }

    mutating func checkInvariants() throws {
        guard wheel.count == model.count else {
            throw violation("wheel.count \(wheel.count) != model count \(model.count)")
        }
        guard wheel.capacity == peak else {
            throw violation("slab capacity \(wheel.capacity) != peak live timers \(peak)")
        }
        let wakeup = wheel.nextWakeup()
        guard let earliest = model.sorted.first else {
            if let wakeup { throw violation("nextWakeup \(wakeup) with no timer pending") }
            return
        }
        guard let wakeup else { throw violation("nextWakeup is nil with \(model.count) timers pending") }
        // A caller that sleeps until nextWakeup() must never sleep past a due time.
        let bound = max(aligned ? earliest.deadline : dueTime(earliest.deadline), now)
        guard wakeup <= bound else {
            throw violation("nextWakeup \(wakeup) later than the earliest deadline \(earliest.deadline) (bound \(bound))")
        }
        // Spot-check one live timer's view through its ID.
        let sample = model.sorted[rng.index(model.count)]
        guard wheel.isLive(sample.id), wheel.deadline(of: sample.id) == sample.deadline else {
            throw violation("timer \(sample.payload) not live with deadline \(sample.deadline)")
        }
    }

    /// Ends the run: jumps far enough for every finite deadline to fire, then checks the wheel is empty.
    mutating func drainEverything() throws {
        for _ in 0..<4 where model.count > 0 {
            let latest = model.sorted.last { $0.deadline < UInt64.max - 2_000 * ms }?.deadline ?? now
            try advance(to: max(now, latest))
            try checkInvariants()
        }
        // Only the near-UInt64.max timers may remain; cancel them.
        while model.count > 0 {
            try cancelRandom(inBatch: nil)
            try checkInvariants()
        }
        guard wheel.count == 0, wheel.nextWakeup() == nil else {
            throw violation("wheel not empty at the end: count \(wheel.count)")
        }
    }
}
