/// One URL's counts on one loop, when an http run rotates several `--url`s: kept in an array indexed by the
/// URL's position, so the connection that knows which request a response answers counts it with an index,
/// no lookup.
struct URLCounts: Sendable {
    /// Latency of this URL's responses in the window.
    var histogram = Histogram()
    /// Responses with an unexpected status or failing a check, and requests timed out (whole run, as the
    /// run's error counts).
    var errors: UInt64 = 0

    mutating func add(_ other: URLCounts) {
        histogram.merge(other.histogram)
        errors &+= other.errors
    }

    /// Adds `other` element by element (an empty side takes the other's).
    static func add(_ other: [URLCounts], to counts: inout [URLCounts]) {
        if counts.isEmpty { counts = other; return }
        for i in counts.indices where i < other.count { counts[i].add(other[i]) }
    }
}

extension RunResult {
    /// One URL's figures when an http run rotates several (`urls` in the JSON, flat: `url` beside `requests`, …).
    package struct URLFigures: Codable, Sendable, Equatable {
        /// The path (with query) as requested.
        package var url: String
        /// Its responses in the window; its errors are unexpected statuses, failed checks and timeouts.
        package var figures: PartFigures

        enum CodingKeys: String, CodingKey { case url }

        init(url: String, figures: PartFigures) {
            self.url = url
            self.figures = figures
        }

        package init(from decoder: any Decoder) throws {
            url = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .url)
            figures = try PartFigures(from: decoder)
        }

        package func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(url, forKey: .url)
            try figures.encode(to: encoder)
        }
    }

    /// The figures of each path from the loops' counts (nil for one URL).
    static func urlFigures(paths: [String], counts: [URLCounts], window: Double) -> [URLFigures]? {
        guard paths.count > 1, counts.count == paths.count else { return nil }
        return zip(paths, counts).map {
            URLFigures(url: $0, figures: PartFigures($1.histogram, errors: $1.errors, seconds: window))
        }
    }

    /// Merged results: each URL's counts added, when every result has the same URLs in the same order.
    static func mergeURLs(_ results: [RunResult]) -> [URLFigures]? {
        guard let first = results.first?.urls else { return nil }
        let paths = first.map(\.url)
        guard results.allSatisfy({ $0.urls?.map(\.url) == paths }) else { return nil }
        var merged = first
        for other in results.dropFirst() {
            for i in merged.indices { merged[i].figures.add(other.urls![i].figures) }
        }
        return merged
    }
}

extension ReportText {
    /// One line per URL: rate, latency and errors.
    static func urls(_ urls: [RunResult.URLFigures]) -> [String] {
        let width = min(40, urls.map(\.url.count).max() ?? 0)
        var lines = ["  by URL:"]
        for u in urls {
            let name = u.url.count >= width ? u.url : u.url + String(repeating: " ", count: width - u.url.count)
            lines.append("    \(name)  \(partFigures(u.figures))")
        }
        return lines
    }
}
