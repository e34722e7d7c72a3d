/// An open-loop load that ramps and holds: `--stages 10s:1k,30s:20k,10s:0` (k6's ramping-arrival-rate,
/// Gatling's injection profiles). Each stage moves the arrival rate linearly from the previous stage's target
/// (the first from 0) to its own over its duration: `10s:1k` ramps from 0 to 1,000/s, `30s:20k` from 1,000/s
/// to 20,000/s, `10s:0` back down to nothing. A stage whose target equals the previous one holds that rate;
/// a stage of `0s` jumps to its target at once.
///
/// Pure arithmetic on seconds since the load began: the number of arrivals due by `t` is the integral of the
/// rate, piecewise quadratic, and the time of arrival `n` is its inverse, solved per stage in closed form, so
/// no error accumulates over a long run (as with ``RatePacer``'s constant rate).
///
/// ```swift
/// let stages = try ArrivalStages.parse("10s:1k,30s:20k,10s:0")
/// stages.rate(at: 5)              // 500 per second, halfway up the first ramp
/// stages.arrivals(at: 10)         // 5,000 arrivals during the first stage
/// stages.time(ofArrival: 5_000)   // 10 s
/// ```
package struct ArrivalStages: Sendable, Equatable {
    /// One stage: reach `target` arrivals per second over `duration` seconds.
    package struct Stage: Sendable, Equatable {
        package var duration: Double
        package var target: Double

        /// A stage reaching `target` per second over `duration` seconds.
        package init(duration: Double, target: Double) {
            self.duration = duration
            self.target = target
        }
    }

    /// The stages, in order.
    package let stages: [Stage]
    /// Seconds since the load began at which each stage starts.
    package let starts: [Double]
    /// The rate each stage starts from (the previous stage's target; the first stage's: 0).
    package let fromRates: [Double]
    /// Arrivals due before each stage starts; the last entry is the total.
    private let arrivalsBefore: [Double]

    /// The stages, starting from a rate of 0.
    package init(_ stages: [Stage]) {
        self.stages = stages
        var starts: [Double] = [], from: [Double] = [], before: [Double] = [0]
        var t = 0.0, rate = 0.0
        for stage in stages {
            starts.append(t)
            from.append(rate)
            before.append(before.last! + (rate + stage.target) / 2 * stage.duration)
            t += stage.duration
            rate = stage.target
        }
        self.starts = starts
        fromRates = from
        arrivalsBefore = before
    }

    /// The stages' total length, seconds.
    package var duration: Double { (starts.last ?? 0) + (stages.last?.duration ?? 0) }
    /// Arrivals over all the stages.
    package var totalArrivals: Double { arrivalsBefore.last! }
    /// The mean target rate over the stages, per second.
    package var meanRate: Double { duration > 0 ? totalArrivals / duration : 0 }
    /// The highest target rate.
    package var peakRate: Double { stages.map(\.target).max() ?? 0 }

    /// The stage running at `t` (the last one from its end on); a stage of 0 s is never running.
    func stageIndex(at t: Double) -> Int {
        var i = 0
        while i + 1 < stages.count && t >= starts[i] + stages[i].duration { i += 1 }
        return i
    }

    /// The target rate at `t` seconds since the load began (0 after the last stage).
    package func rate(at t: Double) -> Double {
        guard t >= 0, t < duration else { return 0 }
        let i = stageIndex(at: t)
        let stage = stages[i]
        return fromRates[i] + (stage.target - fromRates[i]) * (t - starts[i]) / stage.duration
    }

    /// Arrivals due from the start to `t` seconds (the integral of the rate).
    package func arrivals(at t: Double) -> Double {
        guard t > 0 else { return 0 }
        guard t < duration else { return totalArrivals }
        let i = stageIndex(at: t)
        let tau = t - starts[i]
        let slope = (stages[i].target - fromRates[i]) / stages[i].duration
        return arrivalsBefore[i] + fromRates[i] * tau + slope / 2 * tau * tau
    }

    /// When arrival `n` (0-based, fractional allowed) is due, seconds since the load began: the moment the
    /// count of arrivals due reaches `n` while the rate is positive. Nil when the stages end before it.
    package func time(ofArrival n: Double) -> Double? {
        // The stage in which the count passes n: the first that ends above n (then it began at or below n; a stage
        // through which the rate stays 0 adds nothing, and is passed over). Found by bisection: this runs for
        // every request the pacer hands out.
        guard n >= 0 else { return 0 }
        var low = 0, high = stages.count
        while low < high {
            let middle = (low + high) / 2
            if arrivalsBefore[middle + 1] > n { high = middle } else { low = middle + 1 }
        }
        let i = low
        guard i < stages.count else { return nil }
        let need = n - arrivalsBefore[i]
        guard need > 0 else { return starts[i] }
        // from·τ + (slope/2)·τ² = need, in the form that stays exact when the slope is 0 or the start rate is.
        let from = fromRates[i]
        let halfSlope = (stages[i].target - from) / stages[i].duration / 2
        let root = (from * from + 4 * halfSlope * need).squareRoot()
        let tau = 2 * need / (from + max(0, root.isNaN ? 0 : root))
        return starts[i] + min(tau, stages[i].duration)
    }

    /// The mean target rate between `t0` and `t1` seconds since the load began.
    package func meanRate(from t0: Double, to t1: Double) -> Double {
        t1 > t0 ? (arrivals(at: t1) - arrivals(at: t0)) / (t1 - t0) : rate(at: t0)
    }

    /// The stages as written back: `10s:1000,30s:20000,10s:0`, `0.5s:2.5`.
    package var text: String {
        stages.map { "\(Self.compact($0.duration))s:\(Self.compact($0.target))" }.joined(separator: ",")
    }

    /// A number with up to 3 decimals, no trailing zeros, no separators.
    private static func compact(_ value: Double) -> String {
        var digits = ReportText.fixed(value, 3).filter { $0 != "," }
        while digits.hasSuffix("0") { digits.removeLast() }
        if digits.hasSuffix(".") { digits.removeLast() }
        return digits
    }

    /// Parses `DURATION:RATE,...`: durations as `--duration` takes them (`0s` allowed), rates as `--rate`
    /// (`k` = 1,000, an optional `/s`; `0` allowed).
    package static func parse(_ text: String) throws(ArgumentError) -> ArrivalStages {
        let usage = "--stages takes DURATION:RATE stages separated by commas, such as 10s:1k,30s:20k,10s:0 (the "
            + "rate ramps linearly to each stage's target)"
        var stages: [Stage] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 2 else { throw ArgumentError("\(usage), not '\(part)'") }
            let duration: Double
            do {
                duration = try CommandLineParser.seconds("--stages", String(fields[0]).trimmed, allowZero: true)
            } catch {
                throw ArgumentError("\(usage); '\(fields[0])' is not a time")
            }
            var rateText = String(fields[1]).trimmed
            if rateText.hasSuffix("/s") { rateText.removeLast(2) }
            guard let rate = CommandLineParser.number(rateText), rate >= 0, rate <= 1e9 else {
                throw ArgumentError("\(usage); '\(fields[1])' is not a rate (per second, 0 to 1000m)")
            }
            stages.append(Stage(duration: duration, target: rate))
        }
        guard stages.count <= 1000 else { throw ArgumentError("--stages takes at most 1,000 stages") }
        let profile = ArrivalStages(stages)
        guard profile.duration > 0 else { throw ArgumentError("--stages lasts 0 s: give a stage a duration") }
        guard profile.totalArrivals >= 1 else {
            throw ArgumentError("--stages sends nothing: give a stage a rate above 0")
        }
        return profile
    }
}

/// The schedule of a `--stages` load: request `k` is due when the stages' count of arrivals, scaled by `share`
/// (one loop's part of the load), reaches `k`; never after the last stage. As ``RatePacer``, pure arithmetic on
/// a clock passed in.
///
/// ```swift
/// var pacer = StagePacer(stages: try ArrivalStages.parse("10s:1k,30s:20k"), share: 0.5, start: now)
/// while let intended = pacer.next(now: Deadline.now().uptimeNanoseconds) { send(intendedAt: intended) }
/// ```
package struct StagePacer: ArrivalSchedule, Sendable, Equatable {
    package let start: UInt64
    /// The rate over time; this schedule's part of it is `share`.
    package let stages: ArrivalStages
    package let share: Double
    package private(set) var issued: UInt64 = 0

    /// `share` (more than 0) of `stages`, beginning at `start` ns.
    package init(stages: ArrivalStages, share: Double, start: UInt64) {
        precondition(share > 0 && share.isFinite, "share must be positive")
        self.stages = stages
        self.share = share
        self.start = start
    }

    package func intendedTime(of k: UInt64) -> UInt64 {
        guard let t = stages.time(ofArrival: Double(k) / share) else { return .max }
        let offset = (t * 1e9).rounded(.down)
        return offset >= Double(UInt64.max - start) ? .max : start + UInt64(offset)
    }

    package func estimatedDue(elapsed: UInt64) -> Double { stages.arrivals(at: Double(elapsed) / 1e9) * share }

    package mutating func markIssued() { issued += 1 }
}

extension LoadConfig {
    /// The target rate between `t0` and `t1` seconds since the load began: with `--stages` their mean over
    /// that time, with `--rate` the rate; nil in closed loop.
    func targetRate(from t0: Double, to t1: Double) -> Double? {
        if let stages { return stages.meanRate(from: t0, to: t1) }
        return rate
    }
}
