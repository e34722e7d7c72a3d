import Glibc

/// What the loops have counted so far, summed over them: each series row is the difference of two.
struct SeriesTotals: Sendable {
    /// Completed in the window (requests, messages, …: what the report's `requests` counts).
    var completed: UInt64 = 0
    /// The window's latencies.
    var histogram = Histogram()
    /// Errors of the whole run, by kind.
    var errors = ErrorCounts()
    /// The loops' CPU seconds, user + system.
    var cpuSeconds = 0.0

    /// Adds another loop's.
    mutating func add(_ other: SeriesTotals) {
        completed &+= other.completed
        histogram.merge(other.histogram)
        errors.merge(other.errors)
        cpuSeconds += other.cpuSeconds
    }
}

/// `--series FILE`: one row per interval of the measuring window, written and on disk as the interval ends, so
/// `tail -f` follows the run. Each row is one `write(2)` (no buffer to flush), made on the coordinator thread,
/// never on a loop. Intervals start where the window does; the last one ends with it and is written from the
/// loops' final figures, so the rows' counts add up to the report's. Used by the coordinator thread only.
final class SeriesWriter {
    private let path: String
    private let format: SeriesFormat
    private let interval: UInt64
    private var fd: Int32
    private var windowStart: UInt64 = 0
    /// The totals at the end of the last row; nil until the window begins.
    private var previous: SeriesTotals?
    private var previousEnd: UInt64 = 0
    private var rows = 0
    /// Why writing stopped, once it has.
    private var failure: String?

    /// When the next row is due (monotonic ns); `.max` until the window begins.
    private(set) var due = UInt64.max
    /// Every `pointStride`-th row's percentiles, for the SVG: at most ``maxPoints``, evenly spread.
    private(set) var points: [SeriesPoint] = []
    private var pointStride = 1

    /// More points than the chart is pixels wide show nothing more; past this, every other one is dropped.
    static let maxPoints = 2048

    /// Creates (or empties) the file and writes the CSV header; throws a plain line if it cannot, so the run
    /// does not start.
    init(options: SeriesOptions) throws {
        path = options.path ?? ""
        format = options.format
        interval = LoadRunner.nanos(options.interval)
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw LoadTestError("--series: cannot write \(path): \(String(cString: strerror(errno)))")
        }
        if format == .csv { write(SeriesRow.csvHeader) }
        if let failure { throw LoadTestError("--series: \(failure)") }
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// The window began at `start` (ns) with the loops at `totals`: the window's own counters start from zero
    /// whatever the loops counted since, the errors and CPU time from where they are.
    func begin(at start: UInt64, totals: SeriesTotals) {
        var base = totals
        base.completed = 0
        base.histogram = Histogram()
        previous = base
        windowStart = start
        previousEnd = start
        due = start + interval
    }

    /// An interval ended at `end` (ns), the loops at `totals`: writes its row, and the next is due at the first
    /// interval boundary after `end` (a coordinator held up past one skips it, and the row is longer).
    func add(_ totals: SeriesTotals, at end: UInt64) {
        guard previous != nil else { return }
        writeRow(totals, end: end)
        due = windowStart + ((end - windowStart) / interval + 1) * interval
    }

    /// The window ended at `end` with the loops' final `totals`: writes the last row and closes the file.
    /// Returns a warning for the report if some row could not be written.
    func finish(_ totals: SeriesTotals, at end: UInt64) -> String? {
        if previous != nil { writeRow(totals, end: max(end, previousEnd)) }
        due = .max
        close(fd)
        fd = -1
        return failure.map { "--series: \($0); the rows before it are in the file" }
    }

    private func writeRow(_ totals: SeriesTotals, end: UInt64) {
        guard let before = previous else { return }
        let histogram = totals.histogram.subtracting(before.histogram)
        var errors = ErrorCounts()
        for kind in ErrorKind.allCases where totals.errors[kind] > before.errors[kind] {
            errors.add(kind, totals.errors[kind] - before.errors[kind])
        }
        let row = SeriesRow(
            t: Double(end - windowStart) / 1e9, seconds: Double(end - previousEnd) / 1e9,
            requests: totals.completed &- before.completed,
            latency: histogram.count > 0 ? RunResult.Latency(histogram) : nil, errors: errors,
            cpuSeconds: max(0, totals.cpuSeconds - before.cpuSeconds))
        write(row.text(format))
        keepPoint(row)
        previous = totals
        previousEnd = end
        rows += 1
    }

    /// Keeps the row's p50 and p99 for the chart if it falls on the stride; halves the points when too many.
    private func keepPoint(_ row: SeriesRow) {
        guard rows % pointStride == 0, let latency = row.latency else { return }
        points.append(SeriesPoint(t: row.t, p50Us: latency.p50, p99Us: latency.p99))
        if points.count > Self.maxPoints {
            points = stride(from: 0, to: points.count, by: 2).map { points[$0] }
            pointStride *= 2
        }
    }

    /// Writes `text` whole, or notes why not and writes nothing more.
    private func write(_ text: String) {
        guard failure == nil, fd >= 0 else { return }
        var text = text
        text.withUTF8 { bytes in
            var done = 0
            while done < bytes.count {
                let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    failure = "cannot write \(path): \(String(cString: strerror(errno)))"
                    return
                }
                done += n
            }
        }
    }
}
