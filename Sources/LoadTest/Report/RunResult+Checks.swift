import FoundationEssentials

/// What `merge` checks before it adds results up, and what a reader should be told about one result.
extension RunResult {
    /// The settings in which `results` differ, one phrase each ("message size: 64 (result 1), 1024 (result 2)");
    /// empty when they agree. The mode is checked by ``merge(_:allowMixed:)`` itself.
    static func settingDifferences(_ results: [RunResult]) -> [String] {
        func name(_ i: Int) -> String { results[i].id.map { "'\($0)'" } ?? "result \(i + 1)" }
        func differing<T: Equatable>(_ what: String, _ value: (RunResult) -> T, _ show: (T) -> String) -> String? {
            let values = results.map(value)
            guard values.contains(where: { $0 != values[0] }) else { return nil }
            var seen: [(T, [String])] = []
            for (i, v) in values.enumerated() {
                if let at = seen.firstIndex(where: { $0.0 == v }) {
                    seen[at].1.append(name(i))
                } else {
                    seen.append((v, [name(i)]))
                }
            }
            return "\(what): " + seen.map { "\(show($0.0)) (\($0.1.joined(separator: ", ")))" }.joined(separator: ", ")
        }
        return [
            differing("message size", { $0.messageSize }, { $0.map { "\($0) B" } ?? "none" }),
            differing("pipeline", { $0.pipeline }, { $0.map(String.init) ?? "none" }),
            differing("load", { $0.targetRate == nil }, { $0 ? "closed loop" : "open loop" }),
            differing(
                "HTTP path",
                {
                    LoadMode.traits(ofResults: $0.mode).targetHasPath
                        ? $0.target.split(separator: "/", maxSplits: 1).dropFirst().first.map(String.init) : nil
                },
                { $0.map { "/" + $0 } ?? "none" }),
        ].compactMap { $0 }
    }

    /// Sets the merged window (earliest start, latest end) and warns when the parts' windows do not overlap,
    /// overlap for less than nine tenths of the longest, or cannot be checked.
    static func mergeWindows(_ results: [RunResult], into merged: inout RunResult) {
        guard results.count > 1 else { return }
        var warnings = results.flatMap { $0.warnings ?? [] }.filter { !$0.hasPrefix("the measured windows") }
        let windows = results.compactMap { r in r.windowStart.flatMap { s in r.windowEnd.map { (s, $0) } } }
        if windows.count < results.count {
            warnings.append("the measured windows cannot be checked: \(results.count - windows.count) result(s) "
                + "carry no window times (written by an older loadtest)")
            merged.windowStart = nil
            merged.windowEnd = nil
        } else {
            let latestStart = windows.map(\.0).max()!, earliestEnd = windows.map(\.1).min()!
            let earliestStart = windows.map(\.0).min()!, latestEnd = windows.map(\.1).max()!
            let longest = windows.map { $0.1 - $0.0 }.max()!
            let overlap = earliestEnd - latestStart
            if overlap <= 0 {
                warnings.append("the measured windows do not overlap (they start "
                    + "\(ReportText.fixed(latestStart - earliestStart, 1)) s apart): the sum describes no single "
                        + "moment; start the runs together with --start-at")
            } else if overlap < 0.9 * longest {
                warnings.append("the measured windows overlap for only \(ReportText.fixed(overlap, 2)) s of "
                    + "\(ReportText.fixed(longest, 2)) s: start the runs together with --start-at")
            }
            merged.windowStart = earliestStart
            merged.windowEnd = latestEnd
            merged.windowStartSpread = latestStart - earliestStart
        }
        merged.warnings = warnings.isEmpty ? nil : warnings
    }

    /// The warning for an open-loop run that did not reach its target rate (within 5 %), or nil.
    static func rateWarning(target: Double?, achieved: Double) -> String? {
        guard let target, target > 0, achieved < target * 0.95 else { return nil }
        return "the target rate of \(ReportText.fixed(target, 0))/s was not reached: "
            + "\(ReportText.fixed(achieved, 0))/s, \(ReportText.fixed(100 * (1 - achieved / target), 0)) % short "
                + "(the server, the connections or the client loops could not keep up; latency from the intended "
                    + "send time shows the backlog)"
    }
}

extension RunResult {
    /// A decoding error in a few words ("missing key requests_per_second") instead of its full dump.
    package static func describeDecodingError(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "not JSON" }
        switch error {
        case .keyNotFound(let key, _): return "no \"\(key.stringValue)\""
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" has the wrong type"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? "not JSON" : "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" is unreadable"
        @unknown default: return "unreadable"
        }
    }
}
