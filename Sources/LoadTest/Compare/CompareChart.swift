/// `loadtest compare --svg`: each figure's change as a point with its interval, on one axis of percent
/// change around 0 (the error rate, in percentage points, gets a line of text instead), coloured by verdict.
enum CompareChart {
    static let rowHeight = 34.0
    static let plot = (left: 110.0, right: 560.0)

    static func render(_ c: RunComparison) -> String {
        let ratios = c.changes.filter { CompareFigure(rawValue: $0.figure)?.isRatio == true }
        let judged = ratios.filter { $0.verdict != .notJudged }
        let top = SVGChart.titleHeight + 30
        let height = top + rowHeight * Double(ratios.count) + 70
        let width = SVGChart.width
        // A symmetric axis in percent, wide enough for every interval.
        let extent = SVGChart.niceCeiling(judged.map { max(abs($0.low), abs($0.high)) * 100 }.max() ?? 1)
        func x(_ change: Double) -> Double {
            let clamped = min(max(change * 100, -extent), extent)
            return plot.left + (plot.right - plot.left) * (clamped + extent) / (2 * extent)
        }
        let percent = ReportText.fixed(c.confidence * 100, c.confidence * 100 == (c.confidence * 100).rounded() ? 0 : 2)
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>

            """
        svg += SVGChart.text(20, 20, "loadtest compare (\(c.mode)): new against base", bold: true)
        svg += SVGChart.text(
            20, 36, "\(ReportText.count(c.baseRuns, "base run")), \(ReportText.count(c.newRuns, "new run")); "
                + "change with its \(percent)% interval"
                + (c.baseRuns == 1 && c.newRuns == 1 ? " (within-run only: run-to-run noise left out)" : ""),
            color: "#666")
        let bottom = top + rowHeight * Double(ratios.count)
        for i in 0...4 {
            let value = -extent + 2 * extent * Double(i) / 4
            let at = plot.left + (plot.right - plot.left) * Double(i) / 4
            svg += SVGChart.line(at, top - 6, at, bottom, stroke: i == 2 ? "#333" : "#eee")
            let label = (value > 0 ? "+" : "") + ReportText.fixed(value, extent < 10 ? 1 : 0) + "%"
            svg += SVGChart.text(at, bottom + 16, label,
                                 anchor: "middle")
        }
        for (row, change) in ratios.enumerated() {
            let y = top + rowHeight * (Double(row) + 0.5)
            let figure = CompareFigure(rawValue: change.figure)
            svg += SVGChart.text(plot.left - 10, y + 4, change.figure, anchor: "end", bold: true)
            guard change.verdict != .notJudged, let figure else {
                svg += SVGChart.text(plot.left + 4, y + 4, "not judged", color: "#999")
                continue
            }
            let color = self.color(change.verdict)
            svg += "<rect x=\"\(SVGChart.fmt(x(change.low)))\" y=\"\(SVGChart.fmt(y - 5))\" "
                + "width=\"\(SVGChart.fmt(max(1, x(change.high) - x(change.low))))\" height=\"10\" fill=\"\(color)\" "
                + "fill-opacity=\"0.35\"/>\n"
            let (cx, cy) = (SVGChart.fmt(x(change.change)), SVGChart.fmt(y))
            svg += "<circle cx=\"\(cx)\" cy=\"\(cy)\" r=\"4\" fill=\"\(color)\"/>\n"
            svg += SVGChart.text(
                plot.right + 16, y + 4,
                "\(CompareText.signed(change.change, figure))  \(figure.word(for: change.verdict))", color: color)
        }
        let legend = "← less   (throughput: less is slower; latency: less is faster)   more →"
        svg += SVGChart.text(plot.left, bottom + 34, legend,
                             color: "#666")
        if let errors = c.changes.first(where: { $0.figure == CompareFigure.errors.rawValue }) {
            let line = errors.verdict == .notJudged ? "errors: not judged"
                : "errors: \(ReportText.fixed(errors.base, 2))% → \(ReportText.fixed(errors.new, 2))%, "
                    + "\(CompareText.signed(errors.change, .errors)), \(CompareFigure.errors.word(for: errors.verdict))"
            svg += SVGChart.text(plot.left, bottom + 54, line, color: color(errors.verdict))
        }
        svg += "</svg>\n"
        return svg
    }

    static func color(_ verdict: RunComparison.Verdict) -> String {
        switch verdict {
        case .regressed: "#d62728"
        case .improved: "#2ca02c"
        case .noDetectableChange, .notJudged: "#777"
        }
    }
}
