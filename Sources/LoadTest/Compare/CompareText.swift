/// `loadtest compare`'s table: a line per figure (each side's figure, the change, its interval, the verdict),
/// then the method and the warnings.
enum CompareText {
    static func table(_ c: RunComparison) -> String {
        let percent = ReportText.fixed(c.confidence * 100, c.confidence * 100 == (c.confidence * 100).rounded() ? 0 : 2)
        var rows: [[String]] = [["figure", "base", "new", "change", "\(percent)% interval", "verdict"]]
        for change in c.changes {
            guard let figure = CompareFigure(rawValue: change.figure) else { continue }
            let word = figure.word(for: change.verdict)
            guard change.verdict != .notJudged else {
                rows.append([change.figure, "-", "-", "-", "-", word])
                continue
            }
            let stream = c.stream
            rows.append([
                change.figure, figure.show(change.base, stream: stream), figure.show(change.new, stream: stream),
                signed(change.change, figure), signed(change.low, figure) + " to " + signed(change.high, figure), word,
            ])
        }
        let widths = (0..<6).map { column in rows.map { $0[column].count }.max() ?? 0 }
        var lines = [
            "loadtest compare: \(ReportText.count(c.baseRuns, "base run")), \(ReportText.count(c.newRuns, "new run"))"
                + " (\(c.mode))",
        ]
        for row in rows {
            var line = "  "
            for (column, cell) in row.enumerated() {
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                // Names and verdicts to the left, figures to the right.
                line += column == 0 || column == 5 ? cell + pad : pad + cell
                if column < 5 { line += "   " }
            }
            while line.hasSuffix(" ") { line.removeLast() }
            lines.append(line)
        }
        lines.append("  " + method(c))
        for warning in c.warnings { lines.append("  warning: " + warning) }
        return lines.joined(separator: "\n")
    }

    /// Which statistic, and why, in one sentence.
    static func method(_ c: RunComparison) -> String {
        if c.baseRuns == 1 && c.newRuns == 1 {
            return "method: within each run (latency: the histograms' order statistics; throughput: Welch's t on "
                + "the measured seconds; errors: two proportions), as only one run per side was given"
        }
        return "method: each run one observation (the samples of one run are not independent); Welch's t interval "
            + "on the log of the per-run figures (a change in proportion is what stays comparable on a noisy "
            + "machine), on the error rate itself in percentage points"
    }

    /// `+5.2%` for a ratio, `+0.10 pp` for the error rate; no sign on what rounds to 0.
    static func signed(_ value: Double, _ figure: CompareFigure) -> String {
        let scaled = figure.isRatio ? value * 100 : value
        let decimals = figure.isRatio ? 1 : 2
        let text = ReportText.fixed(abs(scaled), decimals) + (figure.isRatio ? "%" : " pp")
        let scale = figure.isRatio ? 10.0 : 100.0
        if (abs(scaled) * scale).rounded() == 0 { return text }
        return (scaled < 0 ? "-" : "+") + text
    }
}
