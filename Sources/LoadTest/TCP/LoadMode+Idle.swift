extension LoadMode {
    /// Connections opened and held (``IdleConnection``): nothing sent, nothing to warm up, no latency; any
    /// server will do.
    package static let idle: LoadMode = {
        var mode = LoadMode(name: "idle",
                            summary: "  idle      open --connections connections and hold them for --duration") {
            worker in ConnectionFactory(worker) { worker, _ in IdleConnection(worker: worker) }
        }
        mode.defaultConnections = 1000
        mode.supportsOpenLoop = false
        mode.warmsUp = false
        mode.chartsConnectionsOnly = true
        mode.expectsReplies = false
        mode.isSwept = { _ in false }
        mode.measuresLatency = { _ in false }
        mode.progress = { p in "\(p.sample.connections) connections open, \(p.sample.errors) errors" }
        mode.reportTitle = { _ in "idle connections" }
        mode.reportThroughput = { r in
            ["  kept: \(r.connectionsOpen) of \(r.connections) connections held for "
                + "\(ReportText.fixed(r.durationSeconds, 1)) s"]
        }
        mode.example = ["--port", "9000", "-c", "10k", "--ramp", "10s", "-d", "60s"]
        return mode
    }()
}
