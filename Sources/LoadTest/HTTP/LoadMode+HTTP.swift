extension LoadMode {
    /// Keep-alive HTTP/1.1 requests (``HTTPConnection``), one or several URLs of one server in rotation; a
    /// status other than the expected ones counts as an error. Several URLs get figures each (``HTTPLoop``).
    package static let http: LoadMode = {
        var mode = LoadMode(name: "http", summary: """
              http      keep-alive HTTP/1.1 requests: --url http://host:port/path (non-2xx counts as an error)
            """) { HTTPLoop(worker: $0) }
        mode.pipelines = true
        mode.resolvesAddress = true
        mode.speaks = "HTTP/1.1"
        mode.target = { "\($0.host):\($0.port)\($0.path)" }
        mode.targetHasPath = true
        mode.reportTitle = { _ in "HTTP/1.1 keep-alive" }
        mode.reportThroughput = { r in
            ["  requests/s: \(ReportText.fixed(r.requestsPerSecond, 0)) (\(ReportText.grouped(r.requests)) responses, "
                + "\(ReportText.fixed(r.mibPerSecond, 2)) MiB/s received, heads and bodies)"]
        }
        mode.options = [.httpTarget, .httpRequest, .statusCheck, .bodyChecks, .httpLimits]
        mode.validate = { (config: inout LoadConfig, given: Set<String>) throws(ArgumentError) in
            guard given.contains("--url") || given.contains("--port") else {
                throw ArgumentError("http mode needs --url http://host:port/path")
            }
            if config.checks.bodies.count > 1 { throw ArgumentError("http mode takes one --expect-body") }
            if config.hostHeader.isEmpty { config.hostHeader = "\(config.host):\(config.port)" }
        }
        mode.example = [
            "--url", "http://127.0.0.1:8080/", "-c", "100", "--rate", "20k", "-d", "30s", "--threshold", "p99<10ms",
        ]
        return mode
    }()
}

/// One loop's share of http mode: the request bytes, built once for every connection of the loop, and with
/// several URLs each one's counts.
final class HTTPLoop: ModeLoop {
    unowned let worker: LoopWorker
    /// One per path in rotation.
    let requests: [[UInt8]]
    /// Several URLs: each one's counts, by its index in the rotation (empty otherwise).
    @exclusivity(unchecked) var urls: [URLCounts] = []

    init(worker: LoopWorker) {
        self.worker = worker
        requests = worker.config.httpRequests
        if requests.count > 1 { urls = Array(repeating: URLCounts(), count: requests.count) }
    }

    func makeConnection(number: Int) -> any LoadConnection { HTTPConnection(shared: self, number: number) }

    func finish() -> (any ModeFigures)? { URLCountsFigures(urls: urls) }

    /// A response to URL `index` arrived at `now`, `latency` ns after it was (meant to be) sent.
    @inline(__always)
    func recordURLReply(_ index: Int, latency: UInt64, now: UInt64) {
        guard worker.inWindow(now) else { return }
        urls[index].histogram.record(latency)
    }

    /// A response to URL `index` failed (status or check), or its request timed out.
    func recordURLError(_ index: Int) {
        guard !worker.stopping else { return }
        urls[index].errors &+= 1
    }
}

/// Every URL's counts from one loop (or several merged).
struct URLCountsFigures: ModeFigures {
    var urls: [URLCounts]

    func adding(_ other: any ModeFigures) -> any ModeFigures {
        var sum = urls
        URLCounts.add((other as? URLCountsFigures)?.urls ?? [], to: &sum)
        return URLCountsFigures(urls: sum)
    }

    func report(into result: inout RunResult, config: LoadConfig, window: Double) {
        result.urls = RunResult.urlFigures(paths: config.http.paths, counts: urls, window: window)
    }
}

extension ModeOptions {
    /// Where http (and ws) mode connects and what its requests carry: the URLs (rotating paths) and header
    /// lines.
    static let httpTarget = ModeOptions(
        flags: ["--url", "--header"],
        usage: """
              --url URL           http[s]://host[:port]/path (ws mode: ws[s]://); repeat for paths in rotation
              --header 'N: v'     add a header line; repeatable                         [-H]
            """
    ) { flag, config, value throws(ArgumentError) in
        if flag == "--url" {
            try CommandLineParser.addURL(try value(), to: &config)
            return true
        }
        guard flag == "--header" else { return false }
        return try CommandLineParser.parseHTTPRequestOption(flag, into: &config, value: value)
    }

    /// What http mode's requests are beyond the URL and headers: the method and the body.
    static let httpRequest = ModeOptions(
        flags: ["--method", "--body", "--body-file"],
        usage: """
              --method M          request method (default GET)                          [-X]
              --body TEXT         request body (Content-Length is added)
              --body-file FILE    request body from a file
            """
    ) { flag, config, value throws(ArgumentError) in
        guard flag != "--header" else { return false }
        return try CommandLineParser.parseHTTPRequestOption(flag, into: &config, value: value)
    }

    /// The HTTP statuses that count as a success.
    static let statusCheck = ModeOptions(
        flags: ["--expect-status"],
        usage: """
              --expect-status L   the statuses that succeed, such as 200,204 or 2xx,301 (default 2xx)
            """
    ) { flag, config, value throws(ArgumentError) in
        guard flag == "--expect-status" else { return false }
        return try CommandLineParser.parseCheckOption(flag, into: &config, value: value)
    }

    /// What a response's body must be to count as a success (else a `check` error).
    static let bodyChecks = ModeOptions(
        flags: ["--expect-body", "--expect-length"],
        usage: """
              --expect-body TEXT  a response (reply) body must contain TEXT (else a 'check' error); tcp: with
                                  escapes as --send, repeatable: one per --send, in rotation
              --expect-length B   a response (reply) body must be B bytes long
            """
    ) { flag, config, value throws(ArgumentError) in
        guard flag != "--expect-status" else { return false }
        return try CommandLineParser.parseCheckOption(flag, into: &config, value: value)
    }

    /// How much of a response http mode reads (``HTTPResponseLimits``).
    static let httpLimits = ModeOptions(
        flags: ["--max-head", "--max-body"],
        usage: """
              --max-head B        the longest response head, and trailers (suffix k = KiB; default 8k); a
                                  longer one is a 'head_too_large' error
              --max-body B        the longest response body (suffix k = KiB, m = MiB; default 1m); a longer
                                  one is a 'body_too_large' error (bodies are read in pieces, never held)
            """
    ) { flag, config, value throws(ArgumentError) in
        switch flag {
        case "--max-head":
            config.httpLimits.maxHead = try CommandLineParser.bytes(flag, try value(), range: 64...(16 << 20))
        case "--max-body":
            config.httpLimits.maxBody = try CommandLineParser.bytes(flag, try value(), range: 0...(1 << 50))
        default:
            return false
        }
        return true
    }
}
