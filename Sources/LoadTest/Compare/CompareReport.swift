import FoundationEssentials

/// `loadtest compare --json`: the comparison as data (each figure's sides, change, interval, verdict and
/// method), the files compared, the figures `--fail-if` judged and those that failed.
struct CompareReport: Codable, Equatable {
    /// One side's reports.
    struct Side: Codable, Equatable {
        var runs: Int
        var files: [String]
    }

    /// One figure, as in the table. `scale` says how to read `change`, `low` and `high`: `ratio` (0.05 is 5 %
    /// more) or `percentage_points`.
    struct Figure: Codable, Equatable {
        var figure: String
        var unit: String
        var base: Double
        var new: Double
        var change: Double
        var low: Double
        var high: Double
        var scale: String
        var verdict: String
        var method: String
    }

    var tool = "loadtest compare"
    var mode: String
    var confidence: Double
    var base: Side
    var new: Side
    var figures: [Figure]
    var warnings: [String]
    /// `--fail-if slower`: the figures judged, and those slower (the exit status is 1 when any is).
    var failIf: [String]?
    var failed: [String]?

    enum CodingKeys: String, CodingKey {
        case tool, mode, confidence, base, new, figures, warnings, failIf = "fail_if", failed
    }

    init(_ c: RunComparison, baseFiles: [String], newFiles: [String], gate: [CompareFigure]?) {
        mode = c.mode
        confidence = c.confidence
        base = Side(runs: c.baseRuns, files: baseFiles)
        new = Side(runs: c.newRuns, files: newFiles)
        figures = c.changes.map { change in
            let figure = CompareFigure(rawValue: change.figure)
            let unit = switch figure {
            case .throughput: c.stream ? "MiB/s" : "1/s"
            case .errors: "%"
            default: "us"
            }
            return Figure(
                figure: change.figure, unit: unit, base: change.base, new: change.new, change: change.change,
                low: change.low, high: change.high, scale: figure?.isRatio == false ? "percentage_points" : "ratio",
                verdict: change.verdict.rawValue, method: change.method)
        }
        warnings = c.warnings
        failIf = gate?.map(\.rawValue)
        failed = gate.map { c.regressed(among: $0).map(\.rawValue) }
    }

    /// Pretty, key-sorted JSON.
    func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }
}

extension RunComparison {
    /// The figures among `figures` that regressed.
    func regressed(among figures: [CompareFigure]) -> [CompareFigure] {
        figures.filter { figure in changes.contains { $0.figure == figure.rawValue && $0.verdict == .regressed } }
    }
}
