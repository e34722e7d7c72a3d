import Glibc

/// One run per side: no run-to-run spread to measure, so each interval comes from inside the two runs. The
/// samples of one run are not independent (a slow second slows many requests), and the noise between runs is
/// left out, so these intervals are too narrow; the comparison says so in its warnings.
extension RunComparison {
    /// A figure's change between two single runs.
    static func withinRuns(_ figure: CompareFigure, _ base: RunResult, _ new: RunResult, confidence: Double)
        -> Change {
        switch figure {
        case .throughput: perSecondThroughput(base, new, confidence: confidence)
        case .errors: errorProportions(base, new, confidence: confidence)
        case .p50, .p90, .p99, .p99_9: histogramPercentile(figure, base, new, confidence: confidence)
        }
    }

    /// Latency: each run's distribution-free interval for the percentile (the ranks around n·q that hold it
    /// with the binomial's probability), at √confidence each, so both hold together with `confidence`; the
    /// change's interval runs from the smallest ratio of the two to the largest.
    static func histogramPercentile(_ figure: CompareFigure, _ base: RunResult, _ new: RunResult,
                                    confidence: Double) -> Change {
        let method = "histogram-order-statistics"
        guard let q = figure.percentile.map({ $0 / 100 }),
              let b = base.histogram.histogram, let n = new.histogram.histogram, b.count > 0, n.count > 0,
              let bv = figure.value(of: base), let nv = figure.value(of: new)
        else { return notJudged(figure, method) }
        let z = CompareStatistics.normalQuantile((1 + confidence.squareRoot()) / 2)
        func bounds(_ h: Histogram) -> (low: Double, high: Double) {
            let count = Double(h.count)
            let spread = z * (count * q * (1 - q)).squareRoot()
            let low = max(1, (count * q - spread).rounded(.down))
            let high = min(count, (count * q + spread).rounded(.up) + 1)
            // The value of rank r: percentile() takes the rank ⌈p·n⌉, so half a rank below r gives r itself.
            func at(_ rank: Double) -> Double { Double(h.percentile((rank - 0.5) * 100 / count)) / 1000 }
            // A percentile is its bucket's middle, within 1/256 of the samples in it: widen by that, so two
            // runs whose ranks fall in one bucket each are not told apart by the bucketing alone.
            return (at(low) * (1 - 1.0 / 256), at(high) * (1 + 1.0 / 256))
        }
        let bb = bounds(b), nb = bounds(n)
        guard bb.low > 0, bb.high > 0 else { return notJudged(figure, method) }
        let low = log(nb.low / bb.high), high = log(nb.high / bb.low)
        return Change(
            figure: figure.rawValue, base: bv, new: nv, change: nv / bv - 1, low: expm1(low), high: expm1(high),
            verdict: verdict(low: low, high: high, figure), method: method)
    }

    /// Throughput: Welch's t on the log of the measured seconds' rates (the warm-up left out).
    static func perSecondThroughput(_ base: RunResult, _ new: RunResult, confidence: Double) -> Change {
        let method = "per-second-welch-log-ratio"
        func rates(_ run: RunResult) -> [Double] {
            run.timeline.filter { !$0.warmup }.map { run.inMebibytes ? $0.mibPerSecond : $0.requestsPerSecond }
                .filter { $0 > 0 && $0.isFinite }
        }
        let b = rates(base), n = rates(new)
        guard b.count > 1, n.count > 1, let bv = CompareFigure.throughput.value(of: base),
              let nv = CompareFigure.throughput.value(of: new),
              let interval = CompareStatistics.welch(base: b.map(log), new: n.map(log), confidence: confidence)
        else { return notJudged(.throughput, method) }
        // The whole window's rates give the estimate; the seconds give its spread.
        let shift = log(nv / bv) - interval.estimate
        return Change(
            figure: CompareFigure.throughput.rawValue, base: bv, new: nv, change: nv / bv - 1,
            low: expm1(interval.low + shift), high: expm1(interval.high + shift),
            verdict: verdict(low: interval.low + shift, high: interval.high + shift, .throughput), method: method)
    }

    /// Errors: the normal interval for a difference of two proportions (in percentage points).
    static func errorProportions(_ base: RunResult, _ new: RunResult, confidence: Double) -> Change {
        let method = "two-proportion"
        func counts(_ run: RunResult) -> (errors: Double, attempts: Double) {
            (Double(run.errors.total), Double(run.requests) + Double(run.errors.total))
        }
        let b = counts(base), n = counts(new)
        guard b.attempts > 0, n.attempts > 0 else { return notJudged(.errors, method) }
        let pb = b.errors / b.attempts, pn = n.errors / n.attempts
        let se = (pb * (1 - pb) / b.attempts + pn * (1 - pn) / n.attempts).squareRoot()
        let z = CompareStatistics.normalQuantile((1 + confidence) / 2)
        let difference = (pn - pb) * 100, half = z * se * 100
        return Change(
            figure: CompareFigure.errors.rawValue, base: pb * 100, new: pn * 100, change: difference,
            low: difference - half, high: difference + half,
            verdict: verdict(low: difference - half, high: difference + half, .errors), method: method)
    }
}
