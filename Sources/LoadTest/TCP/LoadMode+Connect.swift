extension LoadMode {
    /// Connection churn (``ConnectSlot``): connect, one 64-byte echo, close, again; connections/s. Its slots open
    /// and close all the time, so the opening phase waits for none of them, and no reply means no early stop.
    package static let connect: LoadMode = {
        var mode = LoadMode(name: "connect",
                            summary: "  connect   connection churn: connect, one 64-byte echo, close; connections/s") {
            worker in ConnectionFactory(worker) { worker, _ in ConnectSlot(worker: worker) }
        }
        mode.unit = "churn slot"
        mode.defaultConnections = 16
        mode.throughputUnit = .connections
        mode.holdsConnections = false
        mode.expectsReplies = false
        mode.isSwept = { _ in false }
        mode.progress = { p in
            "\(ReportText.fixed(p.sample.requestsPerSecond, 0)) connections/s\(p.target), \(p.sample.errors) errors"
        }
        mode.reportTitle = { _ in "connection churn (connect, 64 B echo, close)" }
        mode.reportThroughput = { r in
            ["  connections/s: \(ReportText.fixed(r.requestsPerSecond, 0)) (\(ReportText.grouped(r.requests)) cycles "
                + "in the window)"]
        }
        mode.options = [.close]
        mode.example = ["--port", "9000", "-c", "16", "--rate", "5k", "--close", "fin", "-d", "30s"]
        return mode
    }()
}

extension ModeOptions {
    /// `--close fin|rst`: how a churn slot closes.
    static let close = ModeOptions(
        flags: ["--close"],
        usage: """
              --close fin|rst     how a slot closes (default rst: no TIME_WAIT)
            """
    ) { flag, config, value throws(ArgumentError) in
        guard flag == "--close" else { return false }
        let how = try value()
        switch how {
        case "rst", "reset": config.closeWithReset = true
        case "fin": config.closeWithReset = false
        default: throw ArgumentError("--close takes 'fin' or 'rst', not '\(how)'")
        }
        return true
    }
}
