extension LoadMode {
    /// UDP ping-pong against a datagram echo server (``UDPFlow``): `--connections` flows, datagrams of `--size`
    /// bytes, closed loop (`--pipeline` in flight per flow) or open loop (`--rate`); loss, reordering,
    /// duplicates and corruption counted (``UDPLoop``).
    package static let udp: LoadMode = {
        var mode = LoadMode(name: "udp", summary: """
              udp       UDP ping-pong against a datagram echo server: --connections flows, --size-byte
                        datagrams (8 to 65,507), --pipeline K in flight per flow; datagrams/s, latency, and
                        loss (no echo within --timeout), reordering, duplicates and corruption
            """) { UDPLoop(worker: $0) }
        mode.unit = "flow"
        mode.isEchoLike = true
        mode.pipelines = true
        mode.resolvesAddress = true
        mode.supportsTLS = false
        // Lost datagrams are what a UDP run measures, not a reason to stop it.
        mode.expectsReplies = false
        mode.progress = { p in
            "\(ReportText.fixed(p.sample.requestsPerSecond, 0)) datagrams/s echoed\(p.target), "
                + "\(p.sample.connections) flows, \(p.sample.errors) errors"
        }
        mode.reportTitle = { r in
            let size = r.messageSize.map { "\($0) B" } ?? "mixed sizes"
            let pipeline = r.pipeline.map { "\($0) in flight per flow" } ?? "mixed pipelines"
            return "UDP echo \(size) datagrams, \(pipeline)"
        }
        mode.reportThroughput = { r in
            var lines = [
                "  datagrams/s: \(ReportText.fixed(r.requestsPerSecond, 0)) echoed (\(ReportText.grouped(r.requests)) "
                    + "round trips, \(ReportText.fixed(r.mibPerSecond, 2)) MiB/s received)"
            ]
            if let d = r.datagrams {
                lines.append("  datagrams: \(ReportText.grouped(d.sent)) sent, \(ReportText.grouped(d.lost)) lost "
                             + "(\(ReportText.fixed(d.lossPercent, 3))%, no echo within the timeout), "
                             + "\(ReportText.grouped(d.reordered)) reordered, \(ReportText.grouped(d.duplicates)) "
                             + "duplicate or late, \(ReportText.grouped(d.corrupt)) corrupt")
            }
            return lines
        }
        mode.validate = { (config: inout LoadConfig, given: Set<String>) throws(ArgumentError) in
            guard given.contains("--port") else {
                throw ArgumentError("udp mode needs --port (and --host, default 127.0.0.1)")
            }
            // The sequence number takes the first 8 bytes; 65,507 is the largest UDP payload over IPv4.
            guard (8...65_507).contains(config.size) else {
                throw ArgumentError("udp mode sends datagrams of 8 to 65,507 bytes (--size), not \(config.size)")
            }
        }
        mode.example = ["--port", "9001", "-c", "8", "--size", "512", "--rate", "50k", "-d", "30s"]
        return mode
    }()
}

/// One loop's share of udp mode: its flows, and what happened to the window's datagrams.
final class UDPLoop: ModeLoop {
    unowned let worker: LoopWorker
    @exclusivity(unchecked) var datagrams = RunResult.Datagrams()

    init(worker: LoopWorker) { self.worker = worker }

    func makeConnection(number: Int) -> any LoadConnection { UDPFlow(shared: self, number: number) }

    func finish() -> (any ModeFigures)? { datagrams }

    /// A datagram goes out, meant for `time`.
    @inline(__always)
    func recordDatagramSent(at time: UInt64) {
        if worker.inWindow(time) { datagrams.sent &+= 1 }
    }

    /// A datagram was not echoed within the timeout (found by the sweep, or its slot needed, at `now`).
    func recordDatagramLost(now: UInt64) {
        if worker.inWindow(now) { datagrams.lost &+= 1 }
    }

    /// An echo arrived after a later one of its flow.
    func recordDatagramReordered(now: UInt64) {
        if worker.inWindow(now) { datagrams.reordered &+= 1 }
    }

    /// An echo of a datagram already echoed or counted lost.
    func recordDatagramDuplicate(now: UInt64) {
        if worker.inWindow(now) { datagrams.duplicates &+= 1 }
    }

    /// An echo whose length or bytes are not what was sent; also a `mismatch` error.
    func recordDatagramCorrupt(now: UInt64, _ message: @autoclosure () -> String) {
        guard !worker.stopping else { return }
        if worker.inWindow(now) { datagrams.corrupt &+= 1 }
        worker.recordError(.mismatch, message())
    }
}

extension RunResult.Datagrams: SummableModeFigures {
    func report(into result: inout RunResult, config: LoadConfig, window: Double) {
        result.datagrams = self
    }
}
