extension LoadMode {
    /// Bulk bytes both ways through an echo server, MiB/s (``StreamConnection``); open loop, chunks of `--size`
    /// (default 64 KiB) at `--rate` per second, each timed until its last byte is echoed.
    package static let stream: LoadMode = {
        var mode = LoadMode(name: "stream", summary: "  stream    bulk bytes both ways through an echo server, MiB/s") {
            worker in ConnectionFactory(worker) { StreamConnection(worker: $0, number: $1) }
        }
        mode.defaultConnections = 10
        mode.throughputUnit = .mebibytes
        mode.latencyIsOptional = true
        mode.sendsSizedChunks = true
        // Closed loop measures bytes, not requests: nothing to time out but the socket reads.
        mode.isSwept = { $0.isOpenLoop }
        mode.measuresLatency = { $0.isOpenLoop }
        mode.progress = { p in
            "\(ReportText.fixed(p.sample.mibPerSecond, 1)) MiB/s, \(p.sample.connections) connections, "
                + "\(p.sample.errors) errors"
        }
        mode.reportTitle = { _ in "stream (bulk echo)" }
        mode.reportThroughput = { r in
            ["  throughput: \(ReportText.fixed(r.mibPerSecond, 1)) MiB/s echoed (\(ReportText.grouped(r.bytes)) bytes)"]
        }
        mode.validate = { (config: inout LoadConfig, given: Set<String>) throws(ArgumentError) in
            try requirePort(config, given)
            if config.isOpenLoop && !given.contains("--size") { config.size = StreamConnection.chunk }
        }
        mode.example = ["--port", "9000", "-c", "10", "--size", "64k", "-d", "30s"]
        return mode
    }()
}
