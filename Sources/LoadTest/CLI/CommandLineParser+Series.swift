/// `--series`, `--series-interval`, `--series-format` (``SeriesOptions``).
extension CommandLineParser {
    /// Handles `flag` if it is one of the series options; false if it is not.
    static func parseSeriesOption(
        _ flag: String, into config: inout LoadConfig, value: () throws(ArgumentError) -> String
    ) throws(ArgumentError) -> Bool {
        switch flag {
        case "--series":
            let path = try outputPath(flag, try value())
            // Standard output carries the progress lines and the report; the rows need a file of their own.
            guard path != "-" else { throw ArgumentError("--series needs a file name (tail -f it to watch the rows)") }
            config.series.path = path
        case "--series-interval":
            let text = try value()
            let seconds = try seconds(flag, text, allowZero: false)
            guard SeriesOptions.intervals.contains(seconds) else {
                throw ArgumentError("--series-interval takes a time from 10ms to 1h, not '\(text)'")
            }
            config.series.givenInterval = seconds
        case "--series-format":
            let text = try value()
            guard let format = SeriesFormat(rawValue: text.lowercased()) else {
                throw ArgumentError("--series-format takes csv or jsonl, not '\(text)'")
            }
            config.series.givenFormat = format
        default:
            return false
        }
        return true
    }

    /// Refuses an interval or a format without a file.
    static func checkSeriesOptions(_ config: LoadConfig) throws(ArgumentError) {
        guard config.series.path == nil else { return }
        if config.series.givenInterval != nil { throw ArgumentError("--series-interval needs --series FILE") }
        if config.series.givenFormat != nil { throw ArgumentError("--series-format needs --series FILE") }
    }
}
