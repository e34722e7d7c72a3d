/// The file format of `--series`.
package enum SeriesFormat: String, Sendable, Equatable, CaseIterable {
    /// Comma-separated values, a header row first.
    case csv
    /// One JSON object per line.
    case jsonl
}

/// `--series FILE`, `--series-interval T`, `--series-format F`: where the per-interval rows go, how often, in
/// which format.
package struct SeriesOptions: Sendable, Equatable {
    /// The file (none: no series).
    package var path: String?
    /// The interval given, seconds (nil: the default, ``defaultInterval``).
    package var givenInterval: Double?
    /// The format given (nil: from the file's extension).
    package var givenFormat: SeriesFormat?

    /// No series.
    package init() {}

    /// One row a second unless told otherwise, as the progress lines.
    package static let defaultInterval = 1.0
    /// The intervals taken: no shorter than 10 ms, since each row costs a round trip to every loop and a merge
    /// of their histograms; no longer than an hour.
    package static let intervals = 0.01...3600.0

    /// The interval, seconds.
    package var interval: Double { givenInterval ?? Self.defaultInterval }

    /// The format: `--series-format`, else `.jsonl` (or `.ndjson`) from the file's name, else CSV.
    package var format: SeriesFormat {
        if let givenFormat { return givenFormat }
        let lower = (path ?? "").lowercased()
        return lower.hasSuffix(".jsonl") || lower.hasSuffix(".ndjson") ? .jsonl : .csv
    }
}
