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
package struct RatePacer: Sendable, Equatable {
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

    /// When the next request is due.
    package var nextIntendedTime: UInt64 { intendedTime(of: issued) }

    /// How many requests are due at `now` and not yet handed out (the backlog).
    package func due(at now: UInt64) -> UInt64 {
        guard now >= start else { return 0 }
        // Requests 0...k are due when intendedTime(k) <= now; k ≈ (now - start) * rate / 1e9.
        var k = UInt64((Double(now - start) * ratePerSecond / 1e9).rounded(.down))
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
        issued += 1
        return intended
    }
}
