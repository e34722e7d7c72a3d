import FoundationEssentials
import Glibc

/// An HdrHistogram interval log (`--hdr-log`), format version 1.3: a `StartTime` line, the legend, then one
/// line per interval of the measuring window, `start,length,max,histogram` (seconds since `StartTime`, the
/// interval's length, its largest latency in ms, its histogram in the V2 compressed encoding, base64), as
/// `HistogramLogWriter` writes it. Values are nanoseconds, so HistogramLogProcessor's default
/// `-outputValueUnitRatio 1000000` reports milliseconds.
final class HdrIntervalLog {
    private let path: String
    private let description: String
    private var text = ""
    private var startTime: Double?

    /// A log for `path` ("-": standard output), written by ``write()``; `description` goes into a comment.
    init(path: String, description: String) {
        self.path = path
        self.description = description
    }

    /// Adds the interval from `start` to `end` (Unix seconds) holding `histogram`.
    func add(start: Double, end: Double, histogram: Histogram) {
        if startTime == nil {
            startTime = start
            text += Self.header(startTime: start, description: description)
        }
        text += Self.line(start: start - startTime!, length: end - start, histogram: histogram)
    }

    /// Writes the log (the header alone when the window held no interval).
    func write() throws(FileIO.Failure) {
        if startTime == nil { text = Self.header(startTime: LoadRunner.wallClock(), description: description) }
        try FileIO.write(Array(text.utf8), to: path)
    }

    static func header(startTime: Double, description: String) -> String {
        """
        #[\(description)]
        #[Histogram log format version 1.3]
        #[StartTime: \(ReportText.fixed(startTime, 3).replacingOccurrences(",", "")) (seconds since epoch)]
        "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"

        """
    }

    static func line(start: Double, length: Double, histogram: Histogram) -> String {
        let encoded = Data(HdrHistogramEncoding.compressed(histogram)).base64EncodedString()
        let max = Double(histogram.count == 0 ? 0 : histogram.max) / 1e6
        func f(_ v: Double) -> String { ReportText.fixed(v, 3).replacingOccurrences(",", "") }
        return "\(f(start)),\(f(length)),\(f(max)),\(encoded)\n"
    }
}

extension String {
    /// Every `target` replaced (FoundationEssentials has no `replacingOccurrences`).
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
