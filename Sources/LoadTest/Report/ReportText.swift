/// Human-readable text: the progress lines and the final report.
package enum ReportText {
    /// `1234567` → `"1,234,567"`.
    package static func grouped(_ value: UInt64) -> String {
        let digits = String(value)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return out
    }

    /// `1` → `"1 connection"`, `1000` → `"1,000 connections"`.
    package static func count(_ n: Int, _ noun: String) -> String {
        "\(grouped(UInt64(max(0, n)))) \(noun)\(n == 1 ? "" : "s")"
    }

    /// A number with `decimals` digits after the point (no Foundation formatting needed).
    package static func fixed(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return "-" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let negative = value < 0
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9e18 else { return String(value) }
        let whole = UInt64(scaled) / UInt64(scale)
        let fraction = UInt64(scaled) % UInt64(scale)
        var text = grouped(whole)
        if decimals > 0 {
            var f = String(fraction)
            while f.count < decimals { f = "0" + f }
            text += "." + f
        }
        return negative ? "-" + text : text
    }

    /// A latency in µs with a sensible unit: `850 ns`, `42.1 µs`, `3.20 ms`, `1.50 s`.
    package static func latency(us: Double) -> String {
        if us < 1 { return fixed(us * 1000, 0) + " ns" }
        if us < 1000 { return fixed(us, 1) + " µs" }
        if us < 1_000_000 { return fixed(us / 1000, 2) + " ms" }
        return fixed(us / 1_000_000, 2) + " s"
    }

    /// A titled block of percentiles.
    static func percentiles(_ title: String, _ l: RunResult.Latency) -> [String] {
        [
            "  \(title):",
            "    p50 \(latency(us: l.p50))   p90 \(latency(us: l.p90))   p99 \(latency(us: l.p99))",
            "    p99.9 \(latency(us: l.p99_9))   p99.99 \(latency(us: l.p99_99))   max \(latency(us: l.max))   "
                + "mean \(latency(us: l.mean))",
        ]
    }

    /// The server's loops over the window (`--server-metrics`): utilisation and lag, all loops, then each.
    static func serverLoops(_ s: RunResult.ServerLoops) -> [String] {
        func lag(_ l: RunResult.ServerLag) -> String {
            guard l.count > 0 else { return "no lag samples" }
            func at(_ us: Double?) -> String { us.map { "≤ " + latency(us: $0) } ?? "> 10 s" }
            return "lag p50 \(at(l.p50Us))   p90 \(at(l.p90Us))   p99 \(at(l.p99Us))   p99.9 \(at(l.p99_9Us))   "
                + "mean \(latency(us: l.meanUs ?? 0)) (\(grouped(l.count)) samples)"
        }
        func line(_ l: RunResult.ServerLoop) -> String {
            "utilisation \(fixed(l.utilisation, 2)) (busy \(fixed(l.busySeconds, 3)) s, waiting "
                + "\(fixed(l.waitSeconds, 3)) s), \(grouped(l.iterations)) iterations, \(grouped(l.stalls)) stalls"
        }
        var lines = ["  server loops (\(s.source), over the window):"]
        lines.append("    \(s.loops.count == 1 ? "the loop" : "all \(s.loops.count) loops"): \(line(s.all))")
        lines.append("      \(lag(s.all.lag))")
        if s.loops.count > 1 {
            for l in s.loops {
                lines.append("    \(l.loop): \(line(l))")
                lines.append("      \(lag(l.lag))")
            }
        }
        return lines
    }

    /// The report printed at the end of a run.
    package static func report(_ r: RunResult) -> String {
        var lines: [String] = []
        // A mode not built in (a LoadProtocol's) is reported as a request/response mode.
        let mode = LoadMode.traits(ofResults: r.mode)
        let what = mode.reportTitle(r)
        let closed = mode.supportsOpenLoop ? ", closed loop" : ""  // idle connections run no loop at all
        var loop = r.targetRate.map { ", open loop at \(fixed($0, 0))/s" } ?? closed
        if let stages = r.stages, let rate = r.targetRate {
            loop = ", open loop in \(count(stages.count, "stage")), \(fixed(rate, 0))/s mean target"
        }
        lines.append("")
        lines.append("loadtest \(r.mode) → \(r.target): \(what)\(loop)\(r.id.map { " [\($0)]" } ?? "")")
        let sources = r.sources > 1 ? ", merged from \(r.sources) results" : ""
        lines.append("  \(count(r.connections, mode.unit)) on \(r.loops) loop(s), \(fixed(r.durationSeconds, 2)) s "
                     + "measured after \(fixed(r.warmupSeconds, 1)) s warm-up\(sources)")
        if let spread = r.windowStartSpread {
            lines.append("  windows: started within \(fixed(spread * 1000, 0)) ms of each other")
        }
        let established = grouped(UInt64(r.connectionsEstablished))
        let failed = grouped(UInt64(r.connectionsFailed))
        if mode.holdsConnections {
            lines.append(
                "  \(mode.unit == "flow" ? "flows" : "connections"): \(established) established, \(failed) failed, "
                    + "\(grouped(UInt64(r.connectionsOpen))) open at the end")
        } else {
            lines.append("  connects: \(established) made, \(failed) failed (whole run, warm-up included)")
        }
        lines += mode.reportThroughput(r)
        if r.latencyUs.count > 0 {
            lines += percentiles("latency\(r.targetRate != nil ? " (from intended send time)" : "")", r.latencyUs)
        }
        if let l = r.serviceTimeUs, l.count > 0 {
            lines += percentiles("service time (from the actual send)", l)
        }
        if let l = r.tlsHandshakeUs, l.count > 0 {
            lines += percentiles("TLS handshake (connect to secured, \(grouped(l.count)) in the window)", l)
        }
        if let cpu = r.clientCPUSeconds, let per = r.clientMicrosecondsPerRequest {
            lines.append("  loadtest CPU: \(fixed(cpu, 2)) s over the window "
                + "(\(fixed(cpu / max(r.durationSeconds, 1e-9) * 100, 0)) % of a core), \(fixed(per, 2)) µs per "
                    + "request")
        }
        if let cpu = r.serverCPUSeconds, let per = r.serverMicrosecondsPerRequest {
            lines.append("  server CPU: \(fixed(cpu, 2)) s over the window, \(fixed(per, 2)) µs per request")
        }
        if let server = r.serverProcess { lines += serverProcess(server, connectionsOpen: r.connectionsOpen) }
        if let server = r.serverLoops { lines += serverLoops(server) }
        if let stages = r.stages { lines += self.stages(stages) }
        if let urls = r.urls { lines += self.urls(urls) }
        if r.errors.total == 0 {
            lines.append("  errors: none")
        } else {
            let kinds = r.errors.byKind.sorted { $0.key < $1.key }.map { "\($0.key) \(grouped($0.value))" }.joined(
                separator: ", ")
            lines.append("  errors: \(grouped(r.errors.total)) (\(kinds))")
            if let first = r.errors.first { lines.append("    first: \(first)") }
        }
        for warning in r.warnings ?? [] { lines.append("  warning: \(warning)") }
        if let thresholds = r.thresholds { lines += self.thresholds(thresholds) }
        return lines.joined(separator: "\n")
    }
}
