/// The fields of `/proc/PID/status` the report uses.
struct ProcessStatus: Equatable {
    /// `VmRSS`: resident memory now, MiB.
    var residentMiB: Double
    /// `VmHWM`: the most resident memory since the process started, MiB.
    var highWaterMiB: Double?
    /// `Threads`.
    var threads: Int?

    /// Reads `/proc/PID/status`; nil when the process is gone (or has no memory: a zombie).
    static func read(pid: Int32) -> ProcessStatus? {
        Limits.readSmallFile("/proc/\(pid)/status").flatMap(parse)
    }

    /// The fields from the text of a `status` file (`VmRSS:\t   12345 kB`).
    static func parse(_ text: String) -> ProcessStatus? {
        var rss: Double?, hwm: Double?, threads: Int?
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon]
            let value = line[line.index(after: colon)...].split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map(
                String.init)
            switch name {
            case "VmRSS": rss = value.flatMap(Double.init).map { $0 / 1024 }
            case "VmHWM": hwm = value.flatMap(Double.init).map { $0 / 1024 }
            case "Threads": threads = value.flatMap { Int($0) }
            default: break
            }
        }
        return rss.map { ProcessStatus(residentMiB: $0, highWaterMiB: hwm, threads: threads) }
    }
}

/// The server process's memory over a run (`--server-pid`, any mode), read from `/proc/PID/status` before the
/// connections open, once a second, and as the window begins and ends. Its CPU time is read beside it
/// (`/proc/PID/stat`, ``Limits/cpuSeconds(pid:)``). Used by the coordinator thread only.
final class ServerProcessSampler {
    private let pid: Int32
    private var before: ProcessStatus?
    private var windowStart: Double?
    private var last: ProcessStatus?
    private var peak = 0.0

    /// Starts sampling `pid`: its memory before the run's connections.
    init(pid: Int32) {
        self.pid = pid
        before = ProcessStatus.read(pid: pid)
        if let before { peak = before.residentMiB }
    }

    /// Reads the server's memory at `now` (the first reading at or after `windowBegins` is the window's start);
    /// its resident MiB, for the timeline.
    func sample(now: UInt64, windowBegins: UInt64) -> Double? {
        guard let status = ProcessStatus.read(pid: pid) else { return nil }
        last = status
        peak = max(peak, status.residentMiB)
        if now >= windowBegins && windowStart == nil { windowStart = status.residentMiB }
        return status.residentMiB
    }

    /// What was seen, nil if the process could never be read.
    var figures: RunResult.ServerProcess? {
        guard let end = last ?? before else { return nil }
        return RunResult.ServerProcess(pid: pid, rssBeforeMiB: before?.residentMiB, rssWindowStartMiB: windowStart,
                                       rssPeakMiB: peak, rssEndMiB: last?.residentMiB, highWaterMiB: end.highWaterMiB,
                                       threads: end.threads)
    }
}

extension RunResult {
    /// With `--server-pid`: the server's memory over the run (`server_process` in the JSON); its CPU time is
    /// `server_cpu_s` and `server_us_per_request`.
    package struct ServerProcess: Codable, Sendable, Equatable {
        package var pid: Int32
        /// Resident memory before the connections opened, as the window began, its highest once-a-second
        /// reading over the run, and at the end, MiB.
        package var rssBeforeMiB: Double?
        package var rssWindowStartMiB: Double?
        package var rssPeakMiB: Double
        package var rssEndMiB: Double?
        /// The kernel's high-water mark (`VmHWM`): the most since the process started, MiB.
        package var highWaterMiB: Double?
        /// Its threads at the end.
        package var threads: Int?

        enum CodingKeys: String, CodingKey {
            case pid, rssBeforeMiB = "rss_before_mib", rssWindowStartMiB = "rss_window_start_mib", rssPeakMiB =
                "rss_peak_mib"
            case rssEndMiB = "rss_end_mib", highWaterMiB = "vm_hwm_mib", threads
        }
    }
}

extension ReportText {
    /// The server process's memory over the run, and what each open connection added to it.
    static func serverProcess(_ s: RunResult.ServerProcess, connectionsOpen: Int) -> [String] {
        func mib(_ v: Double) -> String { "\(fixed(v, 1)) MiB" }
        var parts: [String] = []
        if let v = s.rssBeforeMiB { parts.append("\(mib(v)) before the connections") }
        if let v = s.rssWindowStartMiB { parts.append("\(mib(v)) as the window began") }
        if let v = s.rssEndMiB { parts.append("\(mib(v)) at the end") }
        parts.append("\(mib(s.rssPeakMiB)) peak")
        let highWater = s.highWaterMiB.map { " (VmHWM \(mib($0)))" } ?? ""
        let threads = s.threads.map { ", \(count($0, "thread"))" } ?? ""
        var lines = ["  server memory (pid \(s.pid)): resident \(parts.joined(separator: ", "))\(highWater)\(threads)"]
        if let before = s.rssBeforeMiB, let end = s.rssEndMiB, connectionsOpen > 0 {
            let grown = end - before
            lines.append("    \(grown >= 0 ? "+" : "")\(mib(grown)) with \(count(connectionsOpen, "connection")) "
                + "open: \(fixed(grown * 1024 / Double(connectionsOpen), 1)) KiB each")
        }
        return lines
    }
}
