/// One interval of `--series`: what completed in it, its latency, its errors and the client's CPU time, as a
/// CSV row or a JSON line. The columns (and JSON keys), in order, are ``columns``.
struct SeriesRow: Sendable, Equatable {
    /// Seconds since the measuring window began, at the interval's end.
    var t: Double
    /// The interval's length, seconds (the last one ends with the window, so it may be shorter).
    var seconds: Double
    /// What the mode counts (requests, messages, datagrams, connections), as the report's `requests`.
    var requests: UInt64
    /// The interval's latencies (nil with none).
    var latency: RunResult.Latency?
    /// Errors counted in the interval, by kind.
    var errors: ErrorCounts
    /// The client loops' CPU seconds (user + system) in the interval.
    var cpuSeconds: Double

    /// ``requests`` per second of the interval.
    var rate: Double { seconds > 0 ? Double(requests) / seconds : 0 }

    /// The CSV header's names, which are also the JSON keys.
    static let columns = [
        "t_s", "interval_s", "requests", "rate", "p50_us", "p90_us", "p99_us", "p99_9_us", "max_us", "errors",
        "errors_by_kind", "cpu_s",
    ]

    /// The CSV header row.
    static var csvHeader: String { columns.joined(separator: ",") + "\n" }

    /// The row as text of `format`, newline-terminated.
    func text(_ format: SeriesFormat) -> String {
        switch format {
        case .csv: csv
        case .jsonl: jsonLine
        }
    }

    /// The row's values in ``columns`` order; latencies empty when the interval has none, `errors_by_kind` as
    /// `kind=count` pairs joined by `;` (no comma, so the field needs no quoting).
    var csv: String {
        let kinds = ErrorKind.allCases.filter { errors[$0] > 0 }.map { "\($0.rawValue)=\(errors[$0])" }
        return (commonFields.map { $0.csv } + [kinds.joined(separator: ";"), Self.decimal(cpuSeconds, 6)])
            .joined(separator: ",") + "\n"
    }

    /// The row as one JSON object; latencies null when the interval has none, `errors_by_kind` an object of the
    /// non-zero counts.
    var jsonLine: String {
        let kinds = ErrorKind.allCases.filter { errors[$0] > 0 }.map { "\"\($0.rawValue)\":\(errors[$0])" }
        let values = commonFields.map { $0.json } + ["{" + kinds.joined(separator: ",") + "}",
                                                     Self.decimal(cpuSeconds, 6)]
        return "{" + zip(Self.columns, values).map { "\"\($0)\":\($1)" }.joined(separator: ",") + "}\n"
    }

    /// The fields up to `errors`, each as CSV and as JSON.
    private var commonFields: [(csv: String, json: String)] {
        func both(_ text: String) -> (String, String) { (text, text) }
        func us(_ value: Double?) -> (String, String) {
            value.map { both(Self.decimal($0, 3)) } ?? ("", "null")
        }
        return [
            both(Self.decimal(t, 3)), both(Self.decimal(seconds, 3)), both("\(requests)"), both(Self.decimal(rate, 1)),
            us(latency?.p50), us(latency?.p90), us(latency?.p99), us(latency?.p99_9), us(latency?.max),
            both("\(errors.total)"),
        ]
    }

    /// `value` with `decimals` places and no thousands separators: what CSV and JSON readers parse.
    static func decimal(_ value: Double, _ decimals: Int) -> String {
        ReportText.fixed(value, decimals).replacingOccurrences(",", "")
    }
}

/// One point of the latency-over-time chart (``SVGChart``): an interval's end and two of its percentiles.
package struct SeriesPoint: Sendable, Equatable {
    /// Seconds since the measuring window began, at the interval's end.
    package var t: Double
    /// The interval's median and 99th percentile, µs.
    package var p50Us: Double
    package var p99Us: Double
}
