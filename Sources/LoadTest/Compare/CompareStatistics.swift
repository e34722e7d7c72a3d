import Glibc

/// The few distributions `loadtest compare` needs, computed here (the package depends on no statistics
/// library): Student's t and the normal quantiles, and Welch's interval for a difference of means.
enum CompareStatistics {
    /// A difference of two means (new minus base) with its interval.
    struct Interval: Equatable {
        var estimate: Double
        var low: Double
        var high: Double
    }

    /// The arithmetic mean; 0 for none.
    static func mean(_ values: [Double]) -> Double {
        values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count)
    }

    /// The sample variance (n − 1 in the denominator); 0 for fewer than two values.
    static func variance(_ values: [Double]) -> Double {
        guard values.count > 1 else { return 0 }
        let m = mean(values)
        return values.reduce(0) { $0 + ($1 - m) * ($1 - m) } / Double(values.count - 1)
    }

    /// Welch's t interval for mean(new) − mean(base) at `confidence` (two-sided), each value one run.
    ///
    /// With one run on a side, that side's spread cannot be measured: it is taken to be the other side's
    /// (the runs of one machine are about as noisy whichever build they run), with the other side's degrees
    /// of freedom. Nil when neither side has two values.
    static func welch(base: [Double], new: [Double], confidence: Double) -> Interval? {
        guard !base.isEmpty, !new.isEmpty, base.count > 1 || new.count > 1 else { return nil }
        let nb = Double(base.count), nn = Double(new.count)
        var vb = variance(base), vn = variance(new)
        if base.count == 1 { vb = vn }
        if new.count == 1 { vn = vb }
        let estimate = mean(new) - mean(base)
        let qb = vb / nb, qn = vn / nn
        let se = (qb + qn).squareRoot()
        guard se > 0 else { return Interval(estimate: estimate, low: estimate, high: estimate) }
        let df: Double
        if base.count == 1 {
            df = nn - 1
        } else if new.count == 1 {
            df = nb - 1
        } else {
            // Welch–Satterthwaite; both terms are positive here unless one side has no spread at all.
            let denominator = (qb > 0 ? qb * qb / (nb - 1) : 0) + (qn > 0 ? qn * qn / (nn - 1) : 0)
            df = (qb + qn) * (qb + qn) / denominator
        }
        let t = studentQuantile((1 + confidence) / 2, degreesOfFreedom: df)
        return Interval(estimate: estimate, low: estimate - t * se, high: estimate + t * se)
    }

    /// The standard normal quantile (0 < p < 1), by bisection on `erfc` (to 1e-12: ample for a table).
    static func normalQuantile(_ p: Double) -> Double {
        bisect(p, low: -40, high: 40) { 0.5 * erfc(-$0 / 2.0.squareRoot()) }
    }

    /// Student's t quantile with `df` (> 0) degrees of freedom (0 < p < 1): Newton's method from the normal
    /// quantile's Cornish–Fisher correction (a few steps where bisection takes sixty), kept inside a bracket
    /// that bisection narrows whenever a step would leave it.
    static func studentQuantile(_ p: Double, degreesOfFreedom df: Double) -> Double {
        guard p != 0.5 else { return 0 }
        guard p > 0.5 else { return -studentQuantile(1 - p, degreesOfFreedom: df) }
        let z = normalQuantile(p)
        let z3 = z * z * z, z5 = z3 * z * z
        var t = z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df * df)
        var low = 0.0, high = 1e12
        let density = exp(lgamma((df + 1) / 2) - lgamma(df / 2)) / (df * .pi).squareRoot()
        for _ in 0..<100 {
            let error = studentCDF(t, degreesOfFreedom: df) - p
            if error < 0 { low = max(low, t) } else { high = min(high, t) }
            let pdf = density * pow(1 + t * t / df, -(df + 1) / 2)
            var next = t - error / pdf
            if !(next > low && next < high) { next = high < 1e12 ? (low + high) / 2 : 2 * t + 1 }
            if abs(next - t) <= 1e-13 * max(1, abs(t)) { return next }
            t = next
        }
        return t
    }

    /// P(T ≤ t) for Student's t with `df` degrees of freedom.
    static func studentCDF(_ t: Double, degreesOfFreedom df: Double) -> Double {
        let tail = 0.5 * regularizedBeta(df / (df + t * t), df / 2, 0.5)
        return t >= 0 ? 1 - tail : tail
    }

    /// The x at which the increasing `cdf` reaches `p`.
    private static func bisect(_ p: Double, low: Double, high: Double, _ cdf: (Double) -> Double) -> Double {
        var lo = low, hi = high
        for _ in 0..<200 {
            let mid = (lo + hi) / 2
            if cdf(mid) < p { lo = mid } else { hi = mid }
            if hi - lo < 1e-12 * max(1, abs(mid)) { break }
        }
        return (lo + hi) / 2
    }

    /// The regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz's method).
    static func regularizedBeta(_ x: Double, _ a: Double, _ b: Double) -> Double {
        if x <= 0 { return 0 }
        if x >= 1 { return 1 }
        let front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log(1 - x))
        // The fraction converges fast for x below the mean; above it, the symmetry I_x(a,b) = 1 − I_{1−x}(b,a).
        if x > (a + 1) / (a + b + 2) { return 1 - regularizedBeta(1 - x, b, a) }
        let tiny = 1e-300
        var c = 1.0, d = 1 - (a + b) * x / (a + 1)
        if abs(d) < tiny { d = tiny }
        d = 1 / d
        var f = d
        for m in 1...300 {
            let m = Double(m)
            var numerator = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
            for step in 0..<2 {
                d = 1 + numerator * d
                if abs(d) < tiny { d = tiny }
                c = 1 + numerator / c
                if abs(c) < tiny { c = tiny }
                d = 1 / d
                f *= c * d
                if step == 0 { numerator = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)) }
            }
            if abs(c * d - 1) < 1e-15 { break }
        }
        return front * f / a
    }
}
