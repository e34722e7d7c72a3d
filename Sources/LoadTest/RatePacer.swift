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
    /// With `--stages`: the rate over time (this schedule's part of it is `share`); nil for a constant rate.
    package let profile: ArrivalStages?
    private let share: Double

    /// A schedule of `ratePerSecond` requests per second (must be positive) starting at `start`.
    package init(ratePerSecond: Double, start: UInt64) {
        self.init(ratePerSecond: ratePerSecond, start: start, profile: nil, share: 1)
    }

    init(ratePerSecond: Double, start: UInt64, profile: ArrivalStages?, share: Double) {
        precondition(ratePerSecond > 0 && ratePerSecond.isFinite, "rate must be positive")
        self.ratePerSecond = ratePerSecond
        self.start = start
        self.profile = profile
        self.share = share
    }

    /// When request `k` is meant to be sent (ns); `.max` after the last stage. Computed from `k` directly, so
    /// no error accumulates.
    package func intendedTime(of k: UInt64) -> UInt64 {
        var offset: Double
        if let profile {
            guard share > 0, let t = profile.time(ofArrival: Double(k) / share) else { return .max }
            offset = (t * 1e9).rounded(.down)
        } else {
            offset = (Double(k) * 1e9 / ratePerSecond).rounded(.down)
        }
        return offset >= Double(UInt64.max - start) ? .max : start + UInt64(offset)
    }

    /// When the next request is due.
    package var nextIntendedTime: UInt64 { intendedTime(of: issued) }

    /// How many requests are due at `now` and not yet handed out (the backlog).
    package func due(at now: UInt64) -> UInt64 {
        guard now >= start else { return 0 }
        // Requests 0...k are due when intendedTime(k) <= now; k ≈ (now - start) * rate / 1e9.
        let estimate = profile.map { $0.arrivals(at: Double(now - start) / 1e9) * share } ?? Double(now - start) * ratePerSecond / 1e9
        var k = UInt64(estimate.rounded(.down))
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
