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

    /// One pacing pass at `now`: hands every request due by then to `send`, oldest first, with its intended
    /// time (the schedule's, never the time of the pass), until `send` returns false (nowhere to send it: the
    /// request stays due). Returns the next request's intended time, and whether `send` refused one.
    @inline(__always)
    package mutating func handOutDue(now: UInt64, _ send: (UInt64) -> Bool) -> (next: UInt64, refused: Bool) {
        var intended = nextIntendedTime
        while intended <= now {
            guard send(intended) else { return (intended, true) }
            markIssued()
            intended = nextIntendedTime
        }
        return (intended, false)
    }
}

/// When the open-loop timer of a loop fires. One timer serves every connection of the loop, and a pass sends
/// everything due (``ArrivalSchedule/handOutDue(now:_:)``), so the timer only has to wake the loop by the
/// time the next request is due, give or take `slack`:
/// - no sooner than `slack` after the pass that arms it, so at rates above one request per `slack` each
///   wakeup sends a batch instead of one request (replies arriving in between send what is due as well);
/// - and a deadline armed before is kept while it still falls within `[next, next + slack]`, so a pass
///   (one a reply made, typically) costs no `timerfd_settime`.
/// Either way no request goes out more than `slack` after its intended time (plus the loop's own lateness),
/// and its latency still counts from that intended time: the delay is measured, not hidden.
enum PacerWakeup {
    /// The deadline to arm after a pass at `now` whose next request is due at `next` (after `now`), with
    /// `armed` the deadline armed now (0 for none).
    @inline(__always)
    static func deadline(next: UInt64, now: UInt64, armed: UInt64, slack: UInt64) -> UInt64 {
        if armed >= next && armed &- next <= slack { return armed }
        return max(next, now &+ slack)
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
