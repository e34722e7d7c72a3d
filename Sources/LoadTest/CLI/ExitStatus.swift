/// loadtest's exit statuses.
package enum ExitStatus {
    /// The run went as asked: no errors (or only as many as an `errors` threshold allows), thresholds passed.
    package static let success: Int32 = 0
    /// Errors were counted (and no `errors` threshold judged them), or an output could not be written.
    package static let errors: Int32 = 1
    /// The run could not start: a command-line mistake, no server, an unusable output path.
    package static let couldNotRun: Int32 = 2
    /// A `--threshold` failed (k6 uses the same number).
    package static let thresholdFailed: Int32 = 99

    /// The status of a run (`merge`: `countErrors` false, as a merge only reports).
    package static func of(_ result: RunResult, wroteOutputs: Bool, countErrors: Bool = true) -> Int32 {
        if !result.thresholdsPassed { return thresholdFailed }
        if !wroteOutputs { return errors }
        // Only a threshold on the whole run's errors judges them all (one on a URL's or a stage's does not).
        let judged = result.thresholds?.contains { outcome in
            guard let threshold = try? Threshold.parse(outcome.threshold), threshold.scope == nil else { return false }
            return threshold.metric == .errors || threshold.metric == .errorPercent
        } ?? false
        if countErrors && !judged && result.errors.total > 0 { return errors }
        return success
    }
}
