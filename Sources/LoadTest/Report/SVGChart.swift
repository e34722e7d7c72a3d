import Glibc

/// Hand-written SVG: a latency-by-percentile plot (HdrHistogram's view: the x axis stretches the tail,
/// 90 %, 99 %, 99.9 % … equally spaced) above a throughput-over-time chart.
package enum SVGChart {
    static let width = 800.0
    static let plotHeight = 260.0
    static let margin = (left: 80.0, right: 30.0, top: 40.0, bottom: 45.0)

    /// The panels a result gets: a percentile plot where there are latencies (not for closed-loop streams or
    /// idle connections), throughput over time (open connections for idle runs), and the server's memory over
    /// time when it was sampled (`--server-pid`); with `--series`, the intervals' p50 and p99 over the window.
    enum Panel: Equatable {
        case latency, latencyOverTime, throughput, connections, serverMemory
    }

    static func panels(_ result: RunResult) -> [Panel] {
        let mode = LoadMode.traits(ofResults: result.mode)
        var panels: [Panel] = [.latency, .throughput]
        if mode.chartsConnectionsOnly {
            panels = [.connections]
        } else if mode.latencyIsOptional && result.latencyUs.count == 0 {
            panels = [.throughput]
        }
        if let points = result.latencyOverTime, !points.isEmpty, let i = panels.firstIndex(of: .latency) {
            panels.insert(.latencyOverTime, at: i + 1)
        }
        if result.timeline.contains(where: { $0.serverRSSMiB != nil }) { panels.append(.serverMemory) }
        return panels
    }

    static let titleHeight = 44.0

    /// The whole picture for a result: a title saying which run it shows, then its panels.
    package static func render(_ result: RunResult) -> String {
        let panel = plotHeight + margin.top + margin.bottom
        let list = panels(result)
        let height = titleHeight + panel * Double(list.count)
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>

            """
        svg += text(margin.left, 20, title(result), bold: true)
        svg += text(margin.left, 36, subtitle(result), color: "#666")
        for (i, kind) in list.enumerated() {
            let top = titleHeight + panel * Double(i)
            switch kind {
            case .latency: svg += percentilePlot(result, top: top)
            case .latencyOverTime: svg += latencyOverTimePlot(result.latencyOverTime ?? [], top: top)
            case .throughput: svg += throughputPlot(result, top: top)
            case .connections:
                svg += timePlot(
                    result, top: top, title: "Open connections", values: result.timeline.map { Double($0.connections) },
                    color: "#9467bd")
            case .serverMemory:
                svg += timePlot(
                    result, top: top, title: "Server memory (resident MiB)",
                    values: result.timeline.map { $0.serverRSSMiB ?? 0 }, color: "#d62728")
            }
        }
        svg += "</svg>\n"
        return svg
    }

    /// `loadtest echo → 127.0.0.1:9000 [id]`.
    static func title(_ r: RunResult) -> String {
        "loadtest \(r.mode) → \(r.target)\(r.id.map { " [\($0)]" } ?? "")"
    }

    /// Connections, settings and the date of the window (UTC).
    static func subtitle(_ r: RunResult) -> String {
        let mode = LoadMode.reporting(r.mode)
        var parts = [ReportText.count(r.connections, mode?.unit ?? "connection")]
        if let size = r.messageSize, mode?.isEchoLike == true { parts.append("\(size) B") }
        if let pipeline = r.pipeline, pipeline > 1 { parts.append("pipeline \(pipeline)") }
        parts.append(r.targetRate.map { rate in
            r.stages.map { "open loop in \(ReportText.count($0.count, "stage")) (\(ReportText.fixed(rate, 0))/s mean)" }
                ?? "open loop at \(ReportText.fixed(rate, 0))/s"
        } ?? "closed loop")
        parts.append("\(ReportText.fixed(r.durationSeconds, 1)) s measured")
        if r.sources > 1 { parts.append("merged from \(r.sources) results") }
        if let start = r.windowStart { parts.append(utcDate(start)) }
        return parts.joined(separator: ", ")
    }

    /// `2026-11-24 11:09:05 UTC` for Unix seconds.
    static func utcDate(_ seconds: Double) -> String {
        let total = Int(seconds.rounded(.down))
        let days = total >= 0 ? total / 86400 : (total - 86399) / 86400
        let secs = total - days * 86400
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(two(month))-\(two(day)) \(two(secs / 3600)):\(two(secs / 60 % 60)):\(two(secs % 60)) UTC"
    }

    /// The percentile curve's points: (x = log10(1 / (1 - q)), latency µs), one per non-empty bucket.
    static func percentilePoints(_ histogram: Histogram) -> [(x: Double, us: Double)] {
        guard histogram.count > 0 else { return [] }
        var points: [(Double, Double)] = []
        var seen: UInt64 = 0
        let total = Double(histogram.count)
        for (index, count) in histogram.nonEmptyBuckets {
            let low = Double(Histogram.lowestValue(ofBucket: index))
            let high = low + Double(Histogram.width(ofBucket: index) - 1)
            let value = min(max((low + high) / 2, Double(histogram.min)), Double(histogram.max)) / 1000
            let before = Double(seen) / total
            seen += count
            let after = Double(seen) / total
            points.append((tailX(before), value))
            points.append((tailX(after), value))
        }
        return points
    }

    /// log10(1 / (1 - q)), capped at 6 (99.9999 %).
    static func tailX(_ q: Double) -> Double {
        q >= 0.999999 ? 6 : min(6, -log10(1 - q))
    }

    private static func percentilePlot(_ result: RunResult, top: Double) -> String {
        let histogram = result.latencyHistogram
        let points = percentilePoints(histogram)
        let x0 = margin.left, y0 = top + margin.top
        let w = width - margin.left - margin.right, h = plotHeight
        let maxX = max(2, (points.map(\.x).max() ?? 2).rounded(.up))
        // Milliseconds once the axis would read 10,000 µs or more.
        let largest = points.map(\.us).max() ?? 1
        let (unit, scale) = largest >= 10_000 ? ("ms", 1000.0) : ("µs", 1.0)
        let maxY = niceCeiling(largest / scale)
        var s = "<g>\n"
        s += text(
            x0, top + 22,
            "Latency by percentile (\(unit))\(result.targetRate != nil ? ", from intended send time" : "")", bold: true)
        s += axes(x0, y0, w, h)
        if points.isEmpty {
            s += text(x0 + w / 2, y0 + h / 2, "no latency samples", anchor: "middle")
            return s + "</g>\n"
        }
        for i in 0...Int(maxX) {
            let x = x0 + w * Double(i) / maxX
            let label = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"][min(i, 6)]
            s += line(x, y0 + h, x, y0, stroke: "#eee")
            s += text(x, y0 + h + 16, label, anchor: "middle")
        }
        s += yTicks(x0, y0, w, h, maxY)
        do {
            let path = points.map { p in
                "\(fmt(x0 + w * min(p.x, maxX) / maxX)),\(fmt(y0 + h - h * min(p.us / scale, maxY) / maxY))"
            }.joined(separator: " ")
            s += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"\(path)\"/>\n"
        }
        s += "</g>\n"
        return s
    }

    /// p50 and p99 of each `--series` interval, as steps over the measuring window.
    private static func latencyOverTimePlot(_ points: [SeriesPoint], top: Double) -> String {
        let x0 = margin.left, y0 = top + margin.top
        let w = width - margin.left - margin.right, h = plotHeight
        let largest = points.map(\.p99Us).max() ?? 1
        let (unit, scale) = largest >= 10_000 ? ("ms", 1000.0) : ("µs", 1.0)
        let maxY = niceCeiling(largest / scale)
        let maxT = max(points.last?.t ?? 1, 1e-3)
        let title = "Latency over the measured window (\(unit)): p50 solid, p99 dashed"
        var s = "<g>\n" + text(x0, top + 22, title, bold: true)
        s += axes(x0, y0, w, h) + yTicks(x0, y0, w, h, maxY)
        for i in 0...4 {
            s += text(x0 + w * Double(i) / 4, y0 + h + 16, fmt(maxT * Double(i) / 4, maxT < 4 ? 1 : 0) + "s",
                      anchor: "middle")
        }
        for (values, dash) in [(points.map(\.p50Us), ""), (points.map(\.p99Us), " stroke-dasharray=\"6 4\"")] {
            var path: [String] = []
            var previousT = 0.0
            for (point, us) in zip(points, values) {
                let y = fmt(y0 + h - h * min(us / scale, maxY) / maxY)
                path.append("\(fmt(x0 + w * previousT / maxT)),\(y) \(fmt(x0 + w * point.t / maxT)),\(y)")
                previousT = point.t
            }
            s += "<polyline fill=\"none\" stroke=\"#ff7f0e\" stroke-width=\"2\"\(dash) "
                + "points=\"\(path.joined(separator: " "))\"/>\n"
        }
        return s + "</g>\n"
    }

    private static func throughputPlot(_ result: RunResult, top: Double) -> String {
        let unit = LoadMode.traits(ofResults: result.mode).throughputUnit
        let byteMode = unit == .mebibytes
        let title = switch unit {
        case .mebibytes: "Throughput over time (MiB/s)"
        case .connections: "Throughput over time (connections/s)"
        case .requests: "Throughput over time (requests/s)"
        }
        // Open loop (requests, not bytes): the target rate beside the achieved one, dashed.
        let target = byteMode || !result.timeline.contains(where: { $0.targetRate != nil })
            ? nil : result.timeline.map { $0.targetRate ?? 0 }
        return timePlot(
            result, top: top, title: title + (target == nil ? "" : ", target dashed"),
            values: result.timeline.map { byteMode ? $0.mibPerSecond : $0.requestsPerSecond }, color: "#2ca02c",
            target: target)
    }

    /// A per-second series over the run's timeline, the warm-up shaded; `target`, a second series drawn dashed.
    private static func timePlot(_ result: RunResult, top: Double, title: String, values: [Double], color: String,
                                 target: [Double]? = nil) -> String {
        let samples = result.timeline
        let x0 = margin.left, y0 = top + margin.top
        let w = width - margin.left - margin.right, h = plotHeight
        let maxY = niceCeiling(max(values.max() ?? 1, target?.max() ?? 0))
        let maxT = max(1, samples.last?.t ?? 1)
        var s = "<g>\n"
        s += text(x0, top + 22, title, bold: true)
        if samples.isEmpty {
            s += axes(x0, y0, w, h)
            s += text(x0 + w / 2, y0 + h / 2, "no samples", anchor: "middle")
            return s + "</g>\n"
        }
        if let lastWarm = samples.last(where: { $0.warmup }) {
            s += "<rect x=\"\(fmt(x0))\" y=\"\(fmt(y0))\" width=\"\(fmt(w * lastWarm.t / maxT))\" "
                + "height=\"\(fmt(h))\" fill=\"#f4f4f4\"/>\n"
            s += text(x0 + 4, y0 + 14, "warm-up", color: "#999")
        }
        s += axes(x0, y0, w, h)
        let step = maxT > 20 ? (maxT / 10).rounded(.up) : 1
        var t = 0.0
        while t <= maxT + 1e-9 {
            s += text(x0 + w * t / maxT, y0 + h + 16, fmt(t, 0) + "s", anchor: "middle")
            t += step
        }
        s += yTicks(x0, y0, w, h, maxY)
        // --stages: a thin line where each stage begins, numbered (a jump of 0 s takes no line of its own).
        for (i, stage) in (result.stages ?? []).enumerated()
        where stage.durationSeconds > 0 && stage.startSeconds > 0 && stage.startSeconds < maxT {
            let x = x0 + w * stage.startSeconds / maxT
            s += line(x, y0, x, y0 + h, stroke: "#ccc")
            s += text(x + 3, y0 + 12, "\(i + 1)", color: "#999")
        }
        for (series, dash) in [(values, ""), (target, " stroke-dasharray=\"6 4\"")] {
            guard let series else { continue }
            var path: [String] = ["\(fmt(x0)),\(fmt(y0 + h))"]
            var previousT = 0.0
            for (sample, value) in zip(samples, series) {
                let y = y0 + h - h * min(value, maxY) / maxY
                path.append("\(fmt(x0 + w * previousT / maxT)),\(fmt(y))")
                path.append("\(fmt(x0 + w * sample.t / maxT)),\(fmt(y))")
                previousT = sample.t
            }
            s += "<polyline fill=\"none\" stroke=\"\(dash.isEmpty ? color : "#555")\" stroke-width=\"2\"\(dash) "
                + "points=\"\(path.joined(separator: " "))\"/>\n"
        }
        s += "</g>\n"
        return s
    }

    // MARK: Drawing helpers

    static func axes(_ x0: Double, _ y0: Double, _ w: Double, _ h: Double) -> String {
        line(x0, y0 + h, x0 + w, y0 + h, stroke: "#333") + line(x0, y0, x0, y0 + h, stroke: "#333")
    }

    private static func yTicks(_ x0: Double, _ y0: Double, _ w: Double, _ h: Double, _ maxY: Double) -> String {
        var s = ""
        for i in 0...4 {
            let v = maxY * Double(i) / 4
            let y = y0 + h - h * Double(i) / 4
            if i > 0 { s += line(x0, y, x0 + w, y, stroke: "#eee") }
            s += text(x0 - 6, y + 4, ReportText.fixed(v, maxY < 10 ? 2 : 0), anchor: "end")
        }
        return s
    }

    /// 1, 2 or 5 times a power of ten, at or above `value`.
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 0, value.isFinite else { return 1 }
        var magnitude = 1.0
        while magnitude * 10 <= value { magnitude *= 10 }
        while magnitude > value { magnitude /= 10 }
        for factor in [1.0, 2.0, 5.0, 10.0] where factor * magnitude >= value { return factor * magnitude }
        return 10 * magnitude
    }

    static func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String) -> String {
        "<line x1=\"\(fmt(x1))\" y1=\"\(fmt(y1))\" x2=\"\(fmt(x2))\" y2=\"\(fmt(y2))\" stroke=\"\(stroke)\"/>\n"
    }

    static func text(
        _ x: Double, _ y: Double, _ content: String, anchor: String = "start", bold: Bool = false,
        color: String = "#333"
    ) -> String {
        let escaped = content.replacingAll("&", "&amp;").replacingAll("<", "&lt;").replacingAll(">", "&gt;")
        return "<text x=\"\(fmt(x))\" y=\"\(fmt(y))\" text-anchor=\"\(anchor)\" "
            + "fill=\"\(color)\"\(bold ? " font-weight=\"bold\"" : "")>\(escaped)</text>\n"
    }

    static func fmt(_ v: Double, _ decimals: Int = 1) -> String {
        ReportText.fixed(v, decimals).replacingAll(",", "")
    }
}

extension String {
    fileprivate func replacingAll(_ target: String, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
