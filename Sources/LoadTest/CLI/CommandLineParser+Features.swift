/// The options that shape the load and judge it: arrival-rate stages, thresholds and HTTP response checks.
extension CommandLineParser {
    /// Handles the options of load shapes, criteria and checks (`--stages`, `--threshold`, `--expect-*`); false
    /// for any other flag.
    static func parseFeatureOption(
        _ flag: String, into config: inout LoadConfig, value: () throws(ArgumentError) -> String
    ) throws(ArgumentError) -> Bool {
        switch flag {
        case "--threshold":
            config.thresholds.append(try threshold(try value()))
        case "--stages":
            config.stages = try ArrivalStages.parse(try value())
        case "--pacing-slack":
            config.pacingSlack = try pacingSlack(try value())
        default:
            return false
        }
        return true
    }

    /// Handles the response checks (`--expect-status`, `--expect-body`, `--expect-length`); false for any other
    /// flag.
    static func parseCheckOption(
        _ flag: String, into config: inout LoadConfig, value: () throws(ArgumentError) -> String
    ) throws(ArgumentError) -> Bool {
        switch flag {
        case "--expect-status":
            try config.checks.expectStatuses(try value())
        case "--expect-body":
            let text = try value()
            guard !text.isEmpty else { throw ArgumentError("--expect-body needs a substring the body must contain") }
            config.checks.bodies.append(config.mode.takes("--send") ? try unescaped(flag, text) : Array(text.utf8))
        case "--expect-length":
            config.checks.length = try count(flag, try value(), range: 0...Int(Int32.max))
        default:
            return false
        }
        return true
    }

    /// The longest `--pacing-slack`: a wakeup may hold requests back this long at most.
    static let maxPacingSlack: UInt64 = 100_000_000

    /// A `--pacing-slack` in ns: a time with its unit (`ns`, `us`/`µs`, `ms`, `s`), or 0.
    static func pacingSlack(_ text: String) throws(ArgumentError) -> UInt64 {
        let trimmed = text.trimmed
        let hasUnit = trimmed.last.map { !$0.isNumber } ?? false
        guard let us = trimmed == "0" ? 0 : hasUnit ? Threshold.microseconds(trimmed) : nil, us.isFinite, us >= 0,
            us * 1000 <= Double(maxPacingSlack)
        else {
            throw ArgumentError("--pacing-slack takes a time with its unit from 0 to 100ms (e.g. 50us, 200us, "
                                + "1ms), not '\(text)'")
        }
        return UInt64((us * 1000).rounded())
    }

    /// A `--threshold`, its mistake as a command-line error.
    static func threshold(_ text: String) throws(ArgumentError) -> Threshold {
        do {
            return try Threshold.parse(text)
        } catch {
            throw ArgumentError("--threshold: \(error)")
        }
    }

    /// Refuses what these options cannot do, and derives the run's rate and length from `--stages`. `given`
    /// holds the flags on the command line.
    static func checkFeatureOptions(_ config: inout LoadConfig, given: Set<String>) throws(ArgumentError) {
        if let stages = config.stages {
            for flag in ["--rate", "--duration", "--warmup"] where given.contains(flag) {
                throw ArgumentError(
                    "--stages sets the rate and the time (the first stage is the warm-up): leave out \(flag)")
            }
            config.rate = stages.meanRate
            config.duration = stages.duration
            config.warmup = 0
        }
        if given.contains("--pacing-slack") && config.rate == nil {
            throw ArgumentError("--pacing-slack applies to an open-loop run: give --rate or --stages")
        }
        for threshold in config.thresholds {
            switch threshold.scope {
            case .url(let path)?:
                let paths = config.http.paths.isEmpty ? [config.path] : config.http.paths
                guard config.mode.takes("--url"), paths.contains(path) else {
                    throw ArgumentError("--threshold '\(threshold.text)': \(path) is not one of the --url paths "
                                        + "(\(paths.joined(separator: ", ")))")
                }
            case .stage(let n)?:
                guard let count = config.stages?.stages.count, n <= count else {
                    throw ArgumentError("--threshold '\(threshold.text)': there is no stage \(n) (--stages has "
                        + "\(config.stages?.stages.count ?? 0))")
                }
            case nil: break
            }
        }
        if let latency = config.thresholds.first(where: \.isLatency), !config.mode.measuresLatency(config) {
            let why = config.mode.supportsOpenLoop ? "measures no latency in closed loop (only MiB/s)"
                : "sends no requests"
            throw ArgumentError("--threshold '\(latency.text)': \(config.mode.name) mode \(why)")
        }
    }
}
