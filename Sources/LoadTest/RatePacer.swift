/// An open-loop schedule: request `k` is due at ``intendedTime(of:)``, whatever happened to the requests
/// before it. ``RatePacer`` is a constant rate, ``StagePacer`` one that ramps and holds (`--stages`); the
/// worker hands requests out through the same generic code for both, specialized for each, so the constant
/// rate's path stays a plain value with nothing to retain.
package protocol ArrivalSchedule {
    /// The intended time of request 0 (ns, monotonic clock).
    var start: UInt64 { get }
    /// Requests handed out so far; the next one is request `issued`.
    var issued: UInt64 { get }
    /// When request `k` is meant to be sent (ns); `.max` if never.
    func intendedTime(of k: UInt64) -> UInt64
    /// About how many requests are due `elapsed` ns after the start (corrected against ``intendedTime(of:)``).
    func estimatedDue(elapsed: UInt64) -> Double
    /// Counts one more request handed out.
    mutating func markIssued()
}

extension ArrivalSchedule {
    /// When the next request is due.
    package var nextIntendedTime: UInt64 { intendedTime(of: issued) }

    /// How many requests are due at `now` and not yet handed out (the backlog).
    package func due(at now: UInt64) -> UInt64 {
        guard now >= start else { return 0 }
        var k = UInt64(max(0, estimatedDue(elapsed: now - start)).rounded(.down))
        // Correct the floating-point estimate against the exact definition.
        while intendedTime(of: k + 1) <= now { k += 1 }
        while k > 0 && intendedTime(of: k) > now { k -= 1 }
        if intendedTime(of: k) > now { return 0 }
        let dueCount = k + 1
        return dueCount > issued ? dueCount - issued : 0
    }

    /// Hands out the next request if it is due at `now`, returning its intended time; nil if not yet due.
    package mutating func next(now: UInt64) -> UInt64? {
        let intended = nextIntendedTime
        guard intended <= now else { return nil }
        markIssued()
        return intended
    }
}

/// The schedule of an open-loop load: request `k` is due at `start + k / rate`, whatever happened to the
/// requests before it (wrk2's model). Latency is measured from a request's *intended* time, so a server that
/// stalls shows its stall in the tail instead of quietly slowing the load down (no coordinated omission).
///
/// Pure arithmetic on nanosecond timestamps: the caller passes the clock in, so tests drive it with a manual
/// clock.
///
/// ```swift
/// var pacer = RatePacer(ratePerSecond: 1000, start: now)
/// while let intended = pacer.next(now: Deadline.now().uptimeNanoseconds) {
///     send(intendedAt: intended)
/// }
/// arm(timerAt: pacer.nextIntendedTime)
/// ```
package struct RatePacer: ArrivalSchedule, Sendable, Equatable {
    /// The intended time of request 0 (ns, monotonic clock).
    package let start: UInt64
    /// Requests per second.
    package let ratePerSecond: Double
    /// Requests handed out so far; the next one is request `issued`.
    package private(set) var issued: UInt64 = 0

    /// A schedule of `ratePerSecond` requests per second (must be positive) starting at `start`.
    package init(ratePerSecond: Double, start: UInt64) {
        precondition(ratePerSecond > 0 && ratePerSecond.isFinite, "rate must be positive")
        self.ratePerSecond = ratePerSecond
        self.start = start
    }

    /// When request `k` is meant to be sent (ns). Computed from `k` directly, so no error accumulates.
    package func intendedTime(of k: UInt64) -> UInt64 {
        let offset = (Double(k) * 1e9 / ratePerSecond).rounded(.down)
        return offset >= Double(UInt64.max - start) ? .max : start + UInt64(offset)
    }

    package func estimatedDue(elapsed: UInt64) -> Double { Double(elapsed) * ratePerSecond / 1e9 }

    package mutating func markIssued() { issued += 1 }
}
