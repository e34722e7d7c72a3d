/// A command-line mistake, with a sentence that says what to type instead.
package struct ArgumentError: Error, Equatable, CustomStringConvertible {
    /// What is wrong.
    package let message: String
    /// An error saying `message`.
    package init(_ message: String) { self.message = message }
    /// The message.
    package var description: String { message }
}

/// What the command line asks for.
package enum Command: Sendable, Equatable {
    /// Generate load.
    case run(LoadConfig)
    /// Merge JSON results into one report.
    case merge(inputs: [String], jsonPath: String?, svgPath: String?, quiet: Bool, allowMixed: Bool = false,
               thresholds: [Threshold] = [])
    /// Print the usage text.
    case help
    /// Print the version.
    case version
}

/// Parses `loadtest`'s arguments by hand (the package depends on no argument parser). Never traps: every
/// malformed input is an ``ArgumentError``.
///
/// ```swift
/// let command = try CommandLineParser.parse(["echo", "--port", "9000", "--connections", "100"])
/// ```
package enum CommandLineParser {
    /// The usage text.
    package static let usage = """
        usage: loadtest [MODE] [OPTIONS]

        With no arguments: start an echo server in-process on 127.0.0.1 (port 0) and drive 1,000
        connections of 64-byte ping-pong against it for 10 s (options below may change that).

        Modes (against any server: --port P and --host H, or for http --url URL):
          echo      closed-loop ping-pong of --size bytes (--pipeline K in flight per connection)
          stream    bulk bytes both ways through an echo server, MiB/s
          connect   connection churn: connect, one 64-byte echo, close; connections/s
          idle      open --connections connections and hold them for --duration
          http      keep-alive HTTP/1.1 requests: --url http://host:port/path (non-2xx counts as an error)
          udp       UDP ping-pong against a datagram echo server: --connections flows, --size-byte
                    datagrams (8 to 65,507), --pipeline K in flight per flow; datagrams/s, latency, and
                    loss (no echo within --timeout), reordering, duplicates and corruption
          merge     loadtest merge a.json b.json ... [--json F] [--svg F] [--mixed] [--threshold T]: one
                    report of runs made at the same time (refuses different settings unless --mixed; warns
                    when the measured windows do not line up; checks the thresholds on the merged figures)
          With --rate R, echo, http, stream, connect and udp run open loop: R requests (chunks, connections)
          per second in total; latency counts from the intended send time, service time from the actual one.
          Full guide: docs/loadtest.md

        Options:
          --host H            server address (default 127.0.0.1)
          --port P            server port                                           [-p]
          --url URL           http mode: http[s]://host[:port]/path; repeat for paths in rotation
          --method M          http mode: request method (default GET)                 [-X]
          --header 'N: v'     http mode: add a header line; repeatable                [-H]
          --body TEXT         http mode: request body (Content-Length is added)
          --body-file FILE    http mode: request body from a file
          --expect-status L   http mode: the statuses that succeed, such as 200,204 or 2xx,301 (default 2xx)
          --expect-body TEXT  http mode: a response body must contain TEXT (else a 'check' error)
          --expect-length B   http mode: a response body must be B bytes long
          --connections N     connections (connect mode: parallel churn slots)      [-c]
          --size B            echo message size, 1 byte to 1 MiB (suffix k = KiB)   [-s]
          --pipeline K        requests in flight per connection (echo, http; udp: per flow)
          --rate R            open loop: total requests per second (suffix k = 1000); stream mode:  [-r]
                              chunks of --size (default 64 KiB) per second; connect: connections/s
          --stages LIST       open loop that ramps and holds: DURATION:RATE,... such as 10s:1k,30s:20k,10s:0
                              (the rate moves linearly from each target to the next, from 0; replaces
                              --rate, --duration and --warmup); the report gives each stage's figures
          --duration T        measured time: 10, 10s, 500ms, 2m, 1h (default 10 s)   [-d]
          --warmup T          load before measuring starts (default 1 s)
          --ramp T            open the connections evenly over T (default: at once, 64 in flight)
          --max-connecting N  connects in flight while opening connections (default 64)
          --loops N           client event loops / threads (default: one per core)  [-l]
          --timeout T         connect and reply timeout; 0: no reply timeout (default 10 s)  [-t]
          --close fin|rst     connect mode: how to close (default rst: no TIME_WAIT)
          --threshold T       pass/fail criterion, repeatable: p99<10ms, p(95)<200 (ms), mean<1ms, max<1s,
                              errors<0.1%, errors==0, rate>=50k, requests>=1000; a scope judges a part:
                              p99{url:/search}<50ms, rate{stage:2}>=19k; exit status 99 when one fails
                              (also for merge)
          --json FILE         write all figures and the full latency histogram as JSON
          --svg FILE          write a latency percentile plot and a throughput chart
          --server-pid PID    also measure that server's CPU time over the window (µs per request) and its
                              memory (/proc/PID/status) before the connections, over the run and at the end
                              (idle mode: per connection); a PID that names no process is refused
          --start-at TIME     start the load at a wall-clock time (RFC 3339 or Unix seconds), so runs
                              started apart (other processes, machines, pods) measure the same window
          --id NAME           name this run in the JSON and the report (merge lists the names)
          --hdr-log FILE      write the window's latency as an HdrHistogram interval log (1 s intervals)
          --metrics H:P       serve Prometheus text metrics at http://H:P/metrics during the run
          --server-metrics H:P  read an EpollLoop server's metrics page (http://H:P/metrics) as the
                              window begins and ends: report its loops' utilisation and lag
          --tls               TLS after connecting (echo, stream, connect, idle, http); https:// URLs imply it
          --tls-ca FILE       trust the CA certificates in this PEM file (default: the system store)
          --insecure          do not verify the server's certificate                [-k]
          --alpn LIST         offer these ALPN protocols (comma-separated)
          --tls-resume        resume TLS sessions (connect mode: resumed handshakes; default: full ones)
          --tls-server-name N the name to send (SNI) and verify (default: --host)
          --quiet             no progress lines; with --json - or --svg -, no report either  [-q]
          --help                                                                     [-h]
          --version           print loadtest's version

        Exit status: 0 success; 1 errors counted (unless an errors threshold judged them) or an output
        not written; 2 the run could not start; 99 a threshold failed.
        """

    /// Parses the arguments after the program name.
    package static func parse(_ arguments: [String]) throws(ArgumentError) -> Command {
        var rest = arguments[...]
        var mode = LoadMode.demo
        if let first = rest.first, !first.hasPrefix("-") {
            rest = rest.dropFirst()
            if first == "merge" { return try parseMerge(rest) }
            if first == "help" { return .help }
            if first == "version" { return .version }
            guard let parsed = LoadMode(rawValue: first), parsed != .demo else {
                throw ArgumentError("unknown mode '\(first)': use echo, stream, connect, idle, http, udp or merge (or --help)")
            }
            mode = parsed
        }
        var config = LoadConfig(mode: mode)
        var portGiven = false
        var urlGiven = false
        var closeGiven = false
        var sizeGiven = false
        var given: Set<String> = []

        func value(_ flag: String) throws(ArgumentError) -> String {
            guard let next = rest.popFirst() else { throw ArgumentError("\(flag) needs a value") }
            return next
        }

        while let raw = rest.popFirst() {
            // --flag=value is accepted too.
            var flag = raw
            if raw.hasPrefix("--"), let eq = raw.firstIndex(of: "=") {
                flag = String(raw[..<eq])
                rest.insert(String(raw[raw.index(after: eq)...]), at: rest.startIndex)
            }
            given.insert(flag)
            switch flag {
            case "--help", "-h":
                return .help
            case "--version":
                return .version
            case "--host":
                let host = try value(flag)
                guard !host.isEmpty else { throw ArgumentError("--host needs an address") }
                config.host = host
            case "--port", "-p":
                let text = try value(flag)
                guard let port = UInt16(text), port > 0 else {
                    throw ArgumentError("--port takes a number from 1 to 65535, not '\(text)'")
                }
                config.port = port
                portGiven = true
            case "--url":
                let url = try parseURL(try value(flag))
                if urlGiven {
                    // Several URLs rotate over one server's connections, as paths.
                    guard url.host == config.host && url.port == config.port && url.secure == config.tls.enabled else {
                        throw ArgumentError("every --url must name the same host:port as the first (\(config.host):\(config.port)): the connections go to one server and the paths rotate")
                    }
                    config.http.paths.append(url.path)
                    break
                }
                config.host = url.host
                config.port = url.port
                config.path = url.path
                config.http.paths = [url.path]
                config.hostHeader = url.hostHeader
                if url.secure { config.tls.enabled = true }
                portGiven = true
                urlGiven = true
            case "--connections", "-c":
                config.connections = try count(flag, try value(flag), range: 1...1_000_000)
            case "--size", "-s":
                sizeGiven = true
                config.size = try bytes(flag, try value(flag), range: 1...Pattern.maxRun)
            case "--pipeline":
                config.pipeline = try count(flag, try value(flag), range: 1...4096)
            case "--rate", "-r":
                let text = try value(flag)
                // An optional "/s", as --stages and --threshold take a rate (and vegeta's -rate=100/s).
                guard let rate = number(text.hasSuffix("/s") ? String(text.dropLast(2)) : text), rate > 0, rate <= 1e9 else {
                    throw ArgumentError("--rate takes requests per second, more than 0 (e.g. 50000, 50k or 50k/s), not '\(text)'")
                }
                config.rate = rate
            case "--duration", "-d":
                config.duration = try seconds(flag, try value(flag), allowZero: false)
            case "--warmup":
                config.warmup = try seconds(flag, try value(flag), allowZero: true)
            case "--ramp":
                config.ramp = try seconds(flag, try value(flag), allowZero: true)
            case "--max-connecting":
                config.maxConnecting = try count(flag, try value(flag), range: 1...100_000)
            case "--loops", "-l":
                config.loops = try count(flag, try value(flag), range: 1...1024)
            case "--timeout", "-t":
                config.timeout = try seconds(flag, try value(flag), allowZero: true)
            case "--close":
                let how = try value(flag)
                switch how {
                case "rst", "reset": config.closeWithReset = true
                case "fin": config.closeWithReset = false
                default: throw ArgumentError("--close takes 'fin' or 'rst', not '\(how)'")
                }
                closeGiven = true
            case "--json":
                config.jsonPath = try path(flag, try value(flag))
            case "--svg":
                config.svgPath = try path(flag, try value(flag))
            case "--quiet", "-q":
                config.quiet = true
            case "--server-pid":
                let pid = Int32(try count(flag, try value(flag), range: 1...Int(Int32.max)))
                guard Limits.processExists(pid) else {
                    throw ArgumentError("--server-pid: there is no process \(pid) (a server's PID: pgrep -n echo-server)")
                }
                config.serverPID = pid
            default:
                if try parseExtendedOption(flag, into: &config, value: { () throws(ArgumentError) in try value(flag) }) { break }
                if try parseTLSOption(flag, into: &config, value: { () throws(ArgumentError) in try value(flag) }) { break }
                if try parseFeatureOption(flag, into: &config, value: { () throws(ArgumentError) in try value(flag) }) { break }
                if flag.hasPrefix("-") { throw ArgumentError("unknown option '\(flag)' (try --help)") }
                throw ArgumentError("unexpected argument '\(flag)' (try --help)")
            }
        }

        switch config.mode {
        case .demo:
            if portGiven { throw ArgumentError("--port/--url need a mode (for example: loadtest echo --port \(config.port))") }
        case .http, .ws:
            guard urlGiven || portGiven else { throw ArgumentError("http mode needs --url http://host:port/path") }
            if config.hostHeader.isEmpty { config.hostHeader = "\(config.host):\(config.port)" }
        case .udp:
            guard portGiven else { throw ArgumentError("udp mode needs --port (and --host, default 127.0.0.1)") }
            if urlGiven { throw ArgumentError("--url is for http mode") }
            // The sequence number takes the first 8 bytes; 65,507 is the largest UDP payload over IPv4.
            guard (8...65_507).contains(config.size) else {
                throw ArgumentError("udp mode sends datagrams of 8 to 65,507 bytes (--size), not \(config.size)")
            }
            if config.tls.configuration != nil { throw ArgumentError("--tls does not apply to udp mode") }
        case .echo, .stream, .connect, .idle:
            guard portGiven else { throw ArgumentError("\(config.mode.rawValue) mode needs --port (and --host, default 127.0.0.1)") }
            if urlGiven { throw ArgumentError("--url is for http mode") }
        }
        try checkFeatureOptions(&config, given: given)
        if config.rate != nil && config.mode == .idle {
            throw ArgumentError("--rate applies to echo, http, stream, connect and udp modes")
        }
        if config.rate != nil && config.mode == .stream && !sizeGiven { config.size = StreamConnection.chunk }
        try checkExtendedOptions(config)
        try checkTLSOptions(config)
        if config.rate != nil && config.pipeline != 1 {
            throw ArgumentError("--rate and --pipeline do not go together: an open-loop run pipelines as the schedule demands")
        }
        if closeGiven && config.mode != .connect { throw ArgumentError("--close applies to connect mode") }
        return .run(config)
    }

    private static func parseMerge(_ arguments: ArraySlice<String>) throws(ArgumentError) -> Command {
        var rest = arguments
        var inputs: [String] = []
        var json: String?
        var svg: String?
        var quiet = false
        var mixed = false
        var thresholds: [Threshold] = []
        while let arg = rest.popFirst() {
            switch arg {
            case "--json":
                guard let v = rest.popFirst() else { throw ArgumentError("--json needs a value") }
                json = try path(arg, v)
            case "--svg":
                guard let v = rest.popFirst() else { throw ArgumentError("--svg needs a value") }
                svg = try path(arg, v)
            case "--quiet", "-q":
                quiet = true
            case "--mixed":
                mixed = true
            case "--threshold":
                guard let v = rest.popFirst() else { throw ArgumentError("--threshold needs a value") }
                thresholds.append(try threshold(v))
            case "--help", "-h":
                return .help
            case "--version":
                return .version
            default:
                if arg.hasPrefix("-") { throw ArgumentError("unknown option '\(arg)' for merge (try --help)") }
                inputs.append(arg)
            }
        }
        guard !inputs.isEmpty else { throw ArgumentError("merge needs JSON files: loadtest merge a.json b.json") }
        return .merge(inputs: inputs, jsonPath: json, svgPath: svg, quiet: quiet, allowMixed: mixed, thresholds: thresholds)
    }

    // MARK: Values

    struct URLParts: Equatable {
        var host: String
        var port: UInt16
        var path: String
        var hostHeader: String
        /// `https://`: TLS.
        var secure = false
    }

    /// `http://host[:port][/path]` or `https://...`; IPv6 hosts in brackets.
    static func parseURL(_ text: String) throws(ArgumentError) -> URLParts {
        let secure = text.hasPrefix("https://")
        guard secure || text.hasPrefix("http://") else {
            throw ArgumentError("--url must look like http://host:port/path or https://host:port/path, not '\(text)'")
        }
        let rest = text.dropFirst(secure ? "https://".count : "http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        var path = String(rest.dropFirst(authority.count))
        if path.isEmpty { path = "/" } else if path.hasPrefix("?") { path = "/" + path }
        guard !authority.isEmpty, !authority.contains("@") else { throw ArgumentError("--url has no host: '\(text)'") }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw ArgumentError("--url has an unclosed '[': '\(text)'") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw ArgumentError("--url has junk after the host: '\(text)'")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        var port: UInt16 = secure ? 443 : 80
        if let portText {
            guard let p = UInt16(portText), p > 0 else { throw ArgumentError("--url has a bad port '\(portText)'") }
            port = p
        }
        guard !host.isEmpty else { throw ArgumentError("--url has no host: '\(text)'") }
        return URLParts(host: String(host), port: port, path: path, hostHeader: String(authority), secure: secure)
    }

    /// A positive count, with an optional k (×1000) or m (×1,000,000) suffix.
    static func count(_ flag: String, _ text: String, range: ClosedRange<Int>) throws(ArgumentError) -> Int {
        guard let n = number(text), n == n.rounded(), n >= Double(range.lowerBound), n <= Double(range.upperBound) else {
            throw ArgumentError("\(flag) takes a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return Int(n)
    }

    /// A byte count, with an optional k (KiB) or m (MiB) suffix.
    static func bytes(_ flag: String, _ text: String, range: ClosedRange<Int>) throws(ArgumentError) -> Int {
        var digits = Substring(text.lowercased())
        var scale = 1
        for (suffix, factor) in [("kib", 1024), ("mib", 1 << 20), ("kb", 1024), ("mb", 1 << 20), ("k", 1024), ("m", 1 << 20), ("b", 1)]
        where digits.hasSuffix(suffix) {
            digits = digits.dropLast(suffix.count)
            scale = factor
            break
        }
        guard let n = Int(digits), n >= 0, n <= range.upperBound / scale, n * scale >= range.lowerBound else {
            throw ArgumentError("\(flag) takes a size from \(range.lowerBound) to \(range.upperBound) bytes (e.g. 64 or 16k), not '\(text)'")
        }
        return n * scale
    }

    /// A time: plain seconds or with a unit (ms, s, m).
    static func seconds(_ flag: String, _ text: String, allowZero: Bool) throws(ArgumentError) -> Double {
        let lower = text.lowercased()
        var value: Double?
        if lower.hasSuffix("ms") {
            value = Double(lower.dropLast(2)).map { $0 / 1000 }
        } else if lower.hasSuffix("s") {
            value = Double(lower.dropLast())
        } else if lower.hasSuffix("m") {
            value = Double(lower.dropLast()).map { $0 * 60 }
        } else if lower.hasSuffix("h") {
            value = Double(lower.dropLast()).map { $0 * 3600 }
        } else {
            value = Double(lower)
        }
        guard let v = value, v.isFinite, allowZero ? v >= 0 : v > 0, v <= 7 * 86400 else {
            throw ArgumentError("\(flag) takes a time such as 10, 10s, 500ms or 2m\(allowZero ? "" : " (more than 0)"), not '\(text)'")
        }
        return v
    }

    /// A number with an optional k/m suffix (×1000, ×1,000,000).
    static func number(_ text: String) -> Double? {
        var digits = Substring(text.lowercased())
        var scale = 1.0
        if digits.hasSuffix("k") { scale = 1e3; digits = digits.dropLast() } else if digits.hasSuffix("m") { scale = 1e6; digits = digits.dropLast() }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isNumber || $0 == "." }), let v = Double(digits), v.isFinite else {
            return nil
        }
        return v * scale
    }

    private static func path(_ flag: String, _ text: String) throws(ArgumentError) -> String {
        guard !text.isEmpty, !text.hasPrefix("-") || text == "-" else { throw ArgumentError("\(flag) needs a file name") }
        return text
    }
}
