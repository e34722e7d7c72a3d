/// Takes each `--stages` stage's figures as it ends: the coordinator ticks at every stage's end (besides once a
/// second), and the recorder subtracts the loops' error count and window histogram at the previous end from
/// those at this one. Nothing is added to the loops' hot path; a reply counts in the stage in which it arrives.
/// Used by the coordinator thread only.
final class StageRecorder {
    private let stages: ArrivalStages
    private let loadStart: UInt64
    /// Each stage's end, monotonic ns.
    private let ends: [UInt64]
    /// Stages whose figures are taken.
    private var closed = 0
    private var previous: (errors: UInt64, histogram: Histogram)
    /// The figures of the stages taken so far.
    private(set) var figures: [RunResult.StageFigures] = []

    /// A recorder for `stages` of a load that began at `loadStart` with the loops' totals at `start`.
    init(stages: ArrivalStages, loadStart: UInt64, start: WorkerSnapshot) {
        self.stages = stages
        self.loadStart = loadStart
        ends = stages.stages.indices.map {
            loadStart + LoadRunner.nanos(stages.starts[$0] + stages.stages[$0].duration)
        }
        previous = (start.errors, Histogram())
    }

    /// The next tick: the first stage end after `tick` and before `planned`, else `planned`.
    func nextTick(after tick: UInt64, planned: UInt64) -> UInt64 {
        ends.first { $0 > tick && $0 < planned } ?? planned
    }

    /// Whether a stage not yet taken has ended by `now` (then ``take(at:totals:histogram:)`` wants the figures).
    func stageEnded(by now: UInt64) -> Bool { closed < ends.count && ends[closed] <= now }

    /// Takes the figures of every stage ended by `now` from the loops' totals and window histogram; with
    /// `cut`, also those of the stage running at `now` (the run ended early, or its last tick came).
    func take(at now: UInt64, totals: WorkerSnapshot, histogram: Histogram, cut: Bool = false) {
        while closed < ends.count && (ends[closed] <= now || cut) {
            let i = closed
            closed += 1
            let start = loadStart + LoadRunner.nanos(stages.starts[i])
            guard ends[i] <= now || start < now else { break }  // a stage not begun when the run was cut
            let end = min(ends[i], now)
            let seconds = Double(end - min(start, end)) / 1e9
            // Every open-loop reply in the window is in the histogram: its count is the stage's requests.
            let part = RunResult.PartFigures(
                histogram.subtracting(previous.histogram), errors: totals.errors &- previous.errors, seconds: seconds)
            figures.append(
                RunResult.StageFigures(
                    stage: ArrivalStages([stages.stages[i]]).text, startSeconds: stages.starts[i],
                    durationSeconds: seconds,
                    fromRate: stages.fromRates[i], toRate: stages.stages[i].target,
                    targetRate: stages.meanRate(from: stages.starts[i], to: stages.starts[i] + seconds), figures: part))
            previous = (totals.errors, histogram)
        }
    }
}

extension RunResult {
    /// One `--stages` stage's figures (`stages` in the JSON, flat: `stage`, `start_s`, … beside `requests`, …).
    package struct StageFigures: Codable, Sendable, Equatable {
        /// The stage as written back (`30s:20000`).
        package var stage: String
        /// When it began, seconds since the load began, and how long it was measured (shorter when the run was
        /// cut).
        package var startSeconds: Double
        package var durationSeconds: Double
        /// The target rate at its start and at its end, and the mean target over its measured time, per second.
        package var fromRate: Double
        package var toRate: Double
        package var targetRate: Double
        /// The replies that arrived during the stage (latency from the intended send time) and its errors.
        package var figures: PartFigures

        enum CodingKeys: String, CodingKey {
            case stage, startSeconds = "start_s", durationSeconds = "duration_s", fromRate = "from_rate", toRate =
                "to_rate"
            case targetRate = "target_rate"
        }

        /// Adds a part run at the same time by another process (merge).
        mutating func add(_ other: StageFigures) {
            figures.add(other.figures)
            fromRate += other.fromRate
            toRate += other.toRate
            targetRate += other.targetRate
            durationSeconds = max(durationSeconds, other.durationSeconds)
        }
    }
}

extension RunResult.StageFigures {
    // Flat in the JSON: the stage's own keys beside its figures' (outside the type's body, which keeps the
    // memberwise initializer).
    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            stage: try c.decode(String.self, forKey: .stage),
            startSeconds: try c.decode(Double.self, forKey: .startSeconds),
            durationSeconds: try c.decode(Double.self, forKey: .durationSeconds),
            fromRate: try c.decode(Double.self, forKey: .fromRate), toRate: try c.decode(Double.self, forKey: .toRate),
            targetRate: try c.decode(Double.self, forKey: .targetRate),
            figures: try RunResult.PartFigures(from: decoder))
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(stage, forKey: .stage)
        try c.encode(startSeconds, forKey: .startSeconds)
        try c.encode(durationSeconds, forKey: .durationSeconds)
        try c.encode(fromRate, forKey: .fromRate)
        try c.encode(toRate, forKey: .toRate)
        try c.encode(targetRate, forKey: .targetRate)
        try figures.encode(to: encoder)
    }
}

extension RunResult {
    /// Merged results: the stages added up one by one, when every result ran the same number of them.
    static func mergeStages(_ results: [RunResult]) -> [StageFigures]? {
        guard var merged = results.first?.stages,
              results.allSatisfy({ $0.stages?.count == merged.count }) else { return nil }
        for other in results.dropFirst() {
            for i in merged.indices { merged[i].add(other.stages![i]) }
        }
        return merged
    }
}

extension ReportText {
    /// One line per stage: the target beside what was achieved, then latency and errors.
    static func stages(_ stages: [RunResult.StageFigures]) -> [String] {
        var lines = ["  stages (rate target → achieved):"]
        for (i, s) in stages.enumerated() {
            let shape =
                s.fromRate == s.toRate
                ? "hold \(fixed(s.toRate, 0))/s" : "\(fixed(s.fromRate, 0)) → \(fixed(s.toRate, 0))/s"
            guard s.durationSeconds > 0 else {
                lines.append("    \(i + 1). \(s.stage) (\(shape))")
                continue
            }
            lines.append("    \(i + 1). \(s.stage) (\(shape)) at \(fixed(s.startSeconds, 1)) s: "
                + "\(fixed(s.targetRate, 0))/s → \(partFigures(s.figures))")
        }
        return lines
    }
}
