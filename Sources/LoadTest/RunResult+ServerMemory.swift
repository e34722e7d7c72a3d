extension RunResult {
    /// With `--server-pid`: the server's resident memory for the report (the JSON has it per second in the
    /// timeline): at the end, its peak, and what it grew by per open connection since before they were opened,
    /// the figure idle mode is run for. Nil without memory samples.
    var serverMemoryLine: String? {
        let samples = timeline.compactMap(\.serverRSSMiB)
        guard let end = samples.last, let peak = samples.max() else { return nil }
        var line = "  server memory: \(ReportText.fixed(end, 1)) MiB resident at the end (peak \(ReportText.fixed(peak, 1)) MiB)"
        if let before = serverRSSBeforeMiB {
            line += ", \(ReportText.fixed(before, 1)) MiB before the connections were opened"
            if connectionsOpen > 0 {
                line += ": \(ReportText.fixed((end - before) * 1024 / Double(connectionsOpen), 1)) KiB per open connection"
            }
        }
        return line
    }
}
