import ExampleSupport

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
    /// Print one mode's usage text (`loadtest tcp --help`, `loadtest help tcp`).
    case modeHelp(LoadMode)
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
    /// The usage text: the common options, then each mode's own (from its ``LoadMode``).
    package static var usage: String {
        let modes = LoadMode.all.map(\.summary).joined(separator: "\n")
        // The sets of options in groups, one per list of modes taking them.
        var groups: [(modes: [String], usage: String)] = []
        for options in ModeOptions.all {
            let names = options.modes.map(\.name)
            if let i = groups.firstIndex(where: { $0.modes == names }) {
                groups[i].usage += "\n" + options.usage
            } else {
                groups.append((names, options.usage))
            }
        }
        let own = groups.map { group in
            let names = group.modes
            let list = names.count == 1 ? names[0] : names.dropLast().joined(separator: ", ") + " and " + names.last!
            return "\nOptions of \(list) mode\(names.count == 1 ? "" : "s"):\n" + group.usage
        }.joined(separator: "\n")
        let openLoop = LoadMode.all.filter(\.supportsOpenLoop).map(\.name)
        return usageHead + "\n" + modes + "\n" + usageMerge
            + "\n  With --rate R, \(openLoop.joined(separator: ", ")) run open loop: R requests (chunks, connections)"
            + "\n  per second in total; latency counts from the intended send time, service time from the actual one."
            + "\n  Full guide: docs/loadtest.md\n\n" + commonOptions + "\n" + own + "\n\n" + usageTail
    }

    /// The usage text of a program that runs only `mode` (a ``LoadProtocol``'s).
    package static func usage(for mode: LoadMode) -> String {
        "usage: \(mode.name) --port P [OPTIONS]\n\nA load generator for the \(mode.name) protocol, built on "
            + "loadtest (docs/loadtest.md).\n" + optionsHelp(of: mode, title: "Options of the \(mode.name) protocol:")
            + "\n\n" + usageTail
    }

    private static let usageHead = """
        usage: loadtest [MODE] [OPTIONS]

        With no arguments: start an echo server in-process on 127.0.0.1 (port 0) and drive 1,000
        connections of 64-byte ping-pong against it for 10 s (options below may change that).

        Modes (against any server: --port P and --host H, or for http and ws --url URL; the options,
        defaults and an example of one: loadtest MODE --help):
        """

    private static let usageMerge = """
          merge     loadtest merge a.json b.json ... [--json F] [--svg F] [--mixed] [--threshold T]: one
                    report of runs made at the same time (refuses different settings unless --mixed; warns
                    when the measured windows do not line up; checks the thresholds on the merged figures)
          compare   loadtest compare BASE NEW [--confidence P] [--fail-if slower] [--json F] [--svg F]:
                    whether NEW (reports, or a directory of them) is faster or slower than BASE beyond the
                    noise, figure by figure (loadtest compare --help)
        """

    static let commonOptions = """
        Options:
          --host H            server address (default 127.0.0.1)
          --port P            server port                                           [-p]
          --connections N     connections (connect mode: parallel churn slots)      [-c]
          --size B            message size of echo, udp and ws, chunk size of stream; 1 byte to 1 MiB
                              (suffix k = KiB; default 64)                          [-s]
          --pipeline K        requests in flight per connection (echo, http, tcp, ws; udp: per flow)
          --rate R            open loop: total requests per second (suffix k = 1000); stream mode:  [-r]
                              chunks of --size (default 64 KiB) per second; connect: connections/s
          --stages LIST       open loop that ramps and holds: DURATION:RATE,... such as 10s:1k,30s:20k,10s:0
                              (the rate moves linearly from each target to the next, from 0; replaces
                              --rate, --duration and --warmup); the report gives each stage's figures
          --pacing-slack T    open loop: how late a request may go out to share a wakeup with others
                              (default 50us; more costs less CPU at low rates, and shows in the latency)
          --duration T        measured time: 10, 10s, 500ms, 2m, 1h (default 10 s)   [-d]
          --warmup T          load before measuring starts (default 1 s)
          --ramp T            open the connections evenly over T (default: at once, 64 in flight)
          --max-connecting N  connects in flight while opening connections (default 64)
          --loops N           client event loops / threads (default: one per core)  [-l]
          --timeout T         connect and reply timeout; 0: no reply timeout (default 10 s)  [-t]
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
          --series FILE       write a row per interval of the window as it ends: count, rate, p50 to max,
                              errors, client CPU (CSV, or JSON lines for .jsonl)
          --series-interval T the rows' interval, 10ms to 1h (default 1s)
          --series-format F   csv or jsonl (default: from the file's extension, else csv)
          --metrics H:P       serve Prometheus text metrics at http://H:P/metrics during the run
          --server-metrics H:P  read an EpollLoop server's metrics page (http://H:P/metrics) as the
                              window begins and ends: report its loops' utilisation and lag
          --tls               TLS after connecting (all modes but udp); https:// URLs imply it
          --tls-ca FILE       trust the CA certificates in this PEM file (default: the system store)
          --insecure          do not verify the server's certificate                [-k]
          --alpn LIST         offer these ALPN protocols (comma-separated)
          --tls-resume        resume TLS sessions (connect mode: resumed handshakes; default: full ones)
          --tls-server-name N the name to send (SNI) and verify (default: --host)
          --quiet             no progress lines; with --json - or --svg -, no report either  [-q]
          --help                                                                     [-h]
          --version           print loadtest's version
        """

    static let usageTail = """
        Exit status: 0 success; 1 errors counted (unless an errors threshold judged them) or an output
        not written; 2 the run could not start; 99 a threshold failed.
        """

    /// The short spellings of options: each stands for its long name.
    static let aliases = [
        "-p": "--port", "-c": "--connections", "-s": "--size", "-r": "--rate", "-d": "--duration", "-l": "--loops",
        "-t": "--timeout", "-q": "--quiet", "-h": "--help", "-X": "--method", "-H": "--header", "-k": "--insecure",
    ]

    /// Parses the arguments after the program name.
    /// Parses the arguments after the program name; with `fixed`, for a program that runs only that mode (a
    /// ``LoadProtocol``'s): no mode is named, and no merge.
    package static func parse(_ arguments: [String], mode fixed: LoadMode? = nil) throws(ArgumentError) -> Command {
        var mode = fixed ?? LoadMode.demo
        var arguments = arguments[...]
        if fixed == nil, let first = arguments.first, !first.hasPrefix("-") {
            arguments = arguments.dropFirst()
            if first == "merge" { return try parseMerge(arguments) }
            if first == "help" {
                guard let name = arguments.first, let named = LoadMode(rawValue: name), !named.startsServer else {
                    return .help
                }
                return .modeHelp(named)
            }
            if first == "version" { return .version }
            guard let parsed = LoadMode(rawValue: first), !parsed.startsServer else {
                let names = LoadMode.all.map(\.name).joined(separator: ", ")
                throw ArgumentError("unknown mode '\(first)': use \(names) or merge (or --help)")
            }
            mode = parsed
        }
        var config = LoadConfig(mode: mode)
        var scanner = ArgumentScanner(arguments, aliases: aliases)
        while let flag = scanner.next() {
            func value() throws(ArgumentError) -> String {
                guard let next = scanner.value() else { throw ArgumentError("\(flag) needs a value") }
                return next
            }
            switch flag {
            case "--help":
                return fixed == nil && !mode.startsServer ? .modeHelp(mode) : .help
            case "--version":
                return .version
            default:
                if try parseCommonOption(flag, into: &config, value: value) { break }
                if try parseExtendedOption(flag, into: &config, value: value) { break }
                if try parseSeriesOption(flag, into: &config, value: value) { break }
                if try parseTLSOption(flag, into: &config, value: value) { break }
                if try parseFeatureOption(flag, into: &config, value: value) { break }
                if try parseModeOption(flag, into: &config, value: value) { break }
                if flag.hasPrefix("-") { throw ArgumentError("unknown option '\(flag)' (try --help)") }
                throw ArgumentError("unexpected argument '\(flag)' (try --help)")
            }
        }
        let given = scanner.given
        for options in ModeOptions.all where !mode.options.contains(where: { $0.flags == options.flags }) {
            guard let flag = options.flags.first(where: given.contains) else { continue }
            let modes = options.modes.map(\.name)
            let names = modes.joined(separator: " and ") + (modes.count == 1 ? " mode" : " modes")
            let list = options.flags.count == 1 ? "\(flag) applies"
                : options.flags.dropLast().joined(separator: ", ") + " and \(options.flags.last!) apply"
            throw ArgumentError("\(flag) is not an option of \(mode.name) mode: \(list) to \(names)")
        }
        try mode.validate(&config, given)
        try checkFeatureOptions(&config, given: given)
        if config.rate != nil && !mode.supportsOpenLoop {
            let names = LoadMode.all.filter(\.supportsOpenLoop).map(\.name)
            let flag = config.stages != nil ? "--stages" : "--rate"
            throw ArgumentError(
                "\(flag) applies to \(names.dropLast().joined(separator: ", ")) and \(names.last!) modes")
        }
        try checkExtendedOptions(config)
        try checkSeriesOptions(config)
        try checkTLSOptions(config)
        if config.rate != nil && config.pipeline != 1 {
            throw ArgumentError("--rate and --pipeline do not go together: an open-loop run pipelines as the "
                                + "schedule demands")
        }
        return .run(config)
    }

    /// Handles `flag` if some mode takes it as an option of its own; false if none does.
    private static func parseModeOption(
        _ flag: String, into config: inout LoadConfig, value: () throws(ArgumentError) -> String
    ) throws(ArgumentError) -> Bool {
        // The mode's own first: a LoadProtocol's options are in no mode of ``LoadMode/all``.
        for options in config.mode.options + ModeOptions.all where try options.parse(flag, &config, value) {
            return true
        }
        return false
    }

    /// Handles the options every mode takes (server, connections, sizes, times, outputs); false for any other.
    private static func parseCommonOption(
        _ flag: String, into config: inout LoadConfig, value: () throws(ArgumentError) -> String
    ) throws(ArgumentError) -> Bool {
        switch flag {
        case "--host":
            let host = try value()
            guard !host.isEmpty else { throw ArgumentError("--host needs an address") }
            config.host = host
        case "--port":
            let text = try value()
            guard let port = UInt16(text), port > 0 else {
                throw ArgumentError("--port takes a number from 1 to 65535, not '\(text)'")
            }
            config.port = port
        case "--connections":
            config.connections = try count(flag, try value(), range: 1...1_000_000)
        case "--size":
            config.size = try bytes(flag, try value(), range: 1...Pattern.maxRun)
        case "--pipeline":
            config.pipeline = try count(flag, try value(), range: 1...4096)
        case "--rate":
            let text = try value()
            // An optional "/s", as --stages and --threshold take a rate (and vegeta's -rate=100/s).
            guard let rate = number(text.hasSuffix("/s") ? String(text.dropLast(2)) : text), rate > 0, rate <= 1e9
            else {
                throw ArgumentError(
                    "--rate takes requests per second, more than 0 (e.g. 50000, 50k or 50k/s), "
                        + "not '\(text)'")
            }
            config.rate = rate
        case "--duration":
            config.duration = try seconds(flag, try value(), allowZero: false)
        case "--warmup":
            config.warmup = try seconds(flag, try value(), allowZero: true)
        case "--ramp":
            config.ramp = try seconds(flag, try value(), allowZero: true)
        case "--max-connecting":
            config.maxConnecting = try count(flag, try value(), range: 1...100_000)
        case "--loops":
            config.loops = try count(flag, try value(), range: 1...1024)
        case "--timeout":
            config.timeout = try seconds(flag, try value(), allowZero: true)
        case "--json":
            config.jsonPath = try path(flag, try value())
        case "--svg":
            config.svgPath = try path(flag, try value())
        case "--quiet":
            config.quiet = true
        case "--server-pid":
            let pid = Int32(try count(flag, try value(), range: 1...Int(Int32.max)))
            guard Limits.processExists(pid) else {
                throw ArgumentError("--server-pid: there is no process \(pid) (a server's PID: pgrep -n echo-server)")
            }
            config.serverPID = pid
        default:
            return false
        }
        return true
    }

    private static func parseMerge(_ arguments: ArraySlice<String>) throws(ArgumentError) -> Command {
        // The same scanner as a run's, so `--json=F` and `-q` are spelled as there.
        var scanner = ArgumentScanner(arguments, aliases: ["-q": "--quiet", "-h": "--help"])
        var inputs: [String] = []
        var json: String?
        var svg: String?
        var quiet = false
        var mixed = false
        var thresholds: [Threshold] = []
        while let arg = scanner.next() {
            func value() throws(ArgumentError) -> String {
                guard let next = scanner.value() else { throw ArgumentError("\(arg) needs a value") }
                return next
            }
            switch arg {
            case "--json":
                json = try path(arg, try value())
            case "--svg":
                svg = try path(arg, try value())
            case "--quiet":
                quiet = true
            case "--mixed":
                mixed = true
            case "--threshold":
                thresholds.append(try threshold(try value()))
            case "--help":
                return .help
            case "--version":
                return .version
            default:
                if arg.hasPrefix("-") { throw ArgumentError("unknown option '\(arg)' for merge (try --help)") }
                inputs.append(arg)
            }
        }
        guard !inputs.isEmpty else { throw ArgumentError("merge needs JSON files: loadtest merge a.json b.json") }
        return .merge(
            inputs: inputs, jsonPath: json, svgPath: svg, quiet: quiet, allowMixed: mixed, thresholds: thresholds)
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

    /// `http://host[:port][/path]` or `https://...` (ws mode: `ws://` or `wss://`, as `schemes` says); IPv6
    /// hosts in brackets.
    static func parseURL(
        _ text: String, schemes: (plain: String, secure: String) = ("http", "https")
    ) throws(ArgumentError) -> URLParts {
        let secure = text.hasPrefix(schemes.secure + "://")
        guard secure || text.hasPrefix(schemes.plain + "://") else {
            throw ArgumentError("--url must look like \(schemes.plain)://host:port/path or "
                                + "\(schemes.secure)://host:port/path, not '\(text)'")
        }
        let rest = text.dropFirst((secure ? schemes.secure : schemes.plain).count + 3)
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        var path = String(rest.dropFirst(authority.count))
        if path.isEmpty { path = "/" } else if path.hasPrefix("?") { path = "/" + path }
        guard !authority.isEmpty, !authority.contains("@") else { throw ArgumentError("--url has no host: '\(text)'") }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw ArgumentError("--url has an unclosed '[': '\(text)'")
            }
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

    /// `text` with its escapes turned into bytes: `\r`, `\n`, `\t`, `\\`, `\0` and `\xHH`.
    static func unescaped(_ flag: String, _ text: String) throws(ArgumentError) -> [UInt8] {
        var bytes: [UInt8] = []
        var i = text.utf8.startIndex
        let utf8 = text.utf8
        func problem(_ what: String) -> ArgumentError {
            ArgumentError("\(flag): \(what) in '\(text)' (escapes: \\r \\n \\t \\\\ \\0 \\xHH)")
        }
        while i < utf8.endIndex {
            let c = utf8[i]
            i = utf8.index(after: i)
            guard c == UInt8(ascii: "\\") else {
                bytes.append(c)
                continue
            }
            guard i < utf8.endIndex else { throw problem("a lone backslash at the end") }
            let e = utf8[i]
            i = utf8.index(after: i)
            switch e {
            case UInt8(ascii: "r"): bytes.append(13)
            case UInt8(ascii: "n"): bytes.append(10)
            case UInt8(ascii: "t"): bytes.append(9)
            case UInt8(ascii: "0"): bytes.append(0)
            case UInt8(ascii: "\\"): bytes.append(e)
            case UInt8(ascii: "x"):
                guard utf8.distance(from: i, to: utf8.endIndex) >= 2,
                      let hi = hexDigit(utf8[i]), let lo = hexDigit(utf8[utf8.index(after: i)]) else {
                    throw problem("\\x without two hexadecimal digits")
                }
                bytes.append(hi << 4 | lo)
                i = utf8.index(i, offsetBy: 2)
            default:
                throw problem("an unknown escape \\\(Character(Unicode.Scalar(e)))")
            }
        }
        return bytes
    }

    /// Hexadecimal bytes, spaces between them allowed (`0a 0B ff`, `0a0bff`).
    static func hex(_ flag: String, _ text: String) throws(ArgumentError) -> [UInt8] {
        let digits = text.utf8.filter { $0 != UInt8(ascii: " ") }
        var bytes: [UInt8] = []
        var i = 0
        while i + 1 < digits.count, let hi = hexDigit(digits[i]), let lo = hexDigit(digits[i + 1]) {
            bytes.append(hi << 4 | lo)
            i += 2
        }
        guard i == digits.count, !bytes.isEmpty else {
            throw ArgumentError("\(flag) takes bytes in hexadecimal, such as '10 0c 00 04', not '\(text)'")
        }
        return bytes
    }

    private static func hexDigit(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// A positive count, with an optional k (×1000) or m (×1,000,000) suffix.
    static func count(_ flag: String, _ text: String, range: ClosedRange<Int>) throws(ArgumentError) -> Int {
        guard let n = number(text), n == n.rounded(), n >= Double(range.lowerBound), n <= Double(range.upperBound)
        else {
            throw ArgumentError(
                "\(flag) takes a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return Int(n)
    }

    /// A byte count, with an optional k (KiB) or m (MiB) suffix.
    static func bytes(_ flag: String, _ text: String, range: ClosedRange<Int>) throws(ArgumentError) -> Int {
        var digits = Substring(text.lowercased())
        var scale = 1
        for (suffix, factor) in [
            ("kib", 1024), ("mib", 1 << 20), ("kb", 1024), ("mb", 1 << 20), ("k", 1024), ("m", 1 << 20), ("b", 1),
        ]
        where digits.hasSuffix(suffix) {
            digits = digits.dropLast(suffix.count)
            scale = factor
            break
        }
        guard let n = Int(digits), n >= 0, n <= range.upperBound / scale, n * scale >= range.lowerBound else {
            throw ArgumentError("\(flag) takes a size from \(range.lowerBound) to \(range.upperBound) bytes "
                + "(e.g. 64 or 16k), not '\(text)'")
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
            throw ArgumentError(
                "\(flag) takes a time such as 10, 10s, 500ms or 2m\(allowZero ? "" : " (more than 0)"), not '\(text)'")
        }
        return v
    }

    /// A number with an optional k/m suffix (×1000, ×1,000,000).
    static func number(_ text: String) -> Double? {
        var digits = Substring(text.lowercased())
        var scale = 1.0
        if digits.hasSuffix("k") {
            scale = 1e3; digits = digits.dropLast()
        } else if digits.hasSuffix("m") {
            scale = 1e6; digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isNumber || $0 == "." }), let v = Double(digits), v.isFinite
        else {
            return nil
        }
        return v * scale
    }

    private static func path(_ flag: String, _ text: String) throws(ArgumentError) -> String {
        guard !text.isEmpty, !text.hasPrefix("-") || text == "-" else {
            throw ArgumentError("\(flag) needs a file name")
        }
        return text
    }
}
