import ExampleSupport
import Glibc

/// The options that take loadtest beyond one machine and into other tools: HTTP requests beyond a plain GET,
/// a shared start time, a run name, the HdrHistogram log and the metrics endpoint.
extension CommandLineParser {
    /// Handles `flag` if it is one of http mode's request options (method, headers, body); false if it is not.
    static func parseHTTPRequestOption(
        _ flag: String, into config: inout LoadConfig, value: () throws(ArgumentError) -> String
    ) throws(ArgumentError) -> Bool {
        switch flag {
        case "--method":
            let method = try value()
            guard !method.isEmpty, method.utf8.allSatisfy({ isTokenByte($0) }) else {
                throw ArgumentError("--method takes an HTTP method such as GET or POST, not '\(method)'")
            }
            config.http.method = method
        case "--header":
            let line = try value()
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                  line[..<colon].utf8.allSatisfy({ isTokenByte($0) }),
                  !line.utf8.contains(where: { $0 == 13 || $0 == 10 }) else {
                throw ArgumentError("--header takes 'Name: value' on one line, not '\(line)'")
            }
            config.http.headers.append(line)
        case "--body":
            config.http.body = Array(try value().utf8)
        case "--body-file":
            let path = try value()
            do {
                config.http.body = try FileIO.read(path)
            } catch {
                throw ArgumentError("--body-file: \(error)")
            }
        default:
            return false
        }
        return true
    }

    /// `--url`: the first sets the server, the path and the Host header; each further one (the same server)
    /// adds a path to the rotation.
    static func addURL(_ text: String, to config: inout LoadConfig) throws(ArgumentError) {
        let url = try parseURL(text, schemes: config.mode.urlSchemes)
        guard config.http.paths.isEmpty else {
            // Several URLs rotate over one server's connections, as paths.
            guard url.host == config.host && url.port == config.port && url.secure == config.tls.enabled else {
                throw ArgumentError("every --url must name the same host:port as the first "
                                    + "(\(config.host):\(config.port)): the connections go to one server and "
                                    + "the paths rotate")
            }
            config.http.paths.append(url.path)
            return
        }
        config.host = url.host
        config.port = url.port
        config.path = url.path
        config.http.paths = [url.path]
        config.hostHeader = url.hostHeader
        if url.secure { config.tls.enabled = true }
    }

    /// Handles `flag` if it is one of these options (taking its value through `value`); false if it is not.
    static func parseExtendedOption(
        _ flag: String, into config: inout LoadConfig, value: () throws(ArgumentError) -> String
    ) throws(ArgumentError) -> Bool {
        switch flag {
        case "--start-at":
            let text = try value()
            guard let time = wallClockTime(text) else {
                throw ArgumentError(
                    "--start-at takes a wall-clock time: RFC 3339 (2026-11-24T12:00:00Z) or Unix seconds, not '\(text)'"
                )
            }
            config.startAt = time
        case "--id":
            let id = try value()
            guard !id.isEmpty, id.count <= 200 else { throw ArgumentError("--id needs a name (up to 200 characters)") }
            config.runID = id
        case "--hdr-log":
            config.hdrLogPath = try outputPath(flag, try value())
        case "--metrics":
            config.metrics = try metricsAddress(try value())
        case "--server-metrics":
            config.serverMetrics = try metricsAddress(try value(), flag: flag)
        default:
            return false
        }
        return true
    }

    /// Refuses combinations the options do not support.
    static func checkExtendedOptions(_ config: LoadConfig) throws(ArgumentError) {
        if config.hdrLogPath == "-" && (config.jsonPath == "-" || config.svgPath == "-") {
            throw ArgumentError("only one of --json, --svg and --hdr-log can go to standard output")
        }
    }

    /// RFC 3339 (`2026-11-24T12:00:00Z`, `2026-11-24T13:00:00.5+01:00`) or Unix seconds (`1795521600`), as Unix
    /// seconds; nil if it is neither.
    static func wallClockTime(_ text: String) -> Double? {
        if text.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == UInt8(ascii: ".") }), let seconds = Double(text),
            seconds > 0
        {
            return seconds
        }
        let b = Array(text.utf8)
        func digits(_ at: Int, _ n: Int) -> Int? {
            guard at + n <= b.count else { return nil }
            var v = 0
            for i in at..<at + n {
                guard b[i] >= 48 && b[i] <= 57 else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        func byte(_ at: Int, _ c: Character) -> Bool { at < b.count && b[at] == c.asciiValue! }
        guard let year = digits(0, 4), byte(4, "-"), let month = digits(5, 2), byte(7, "-"), let day = digits(8, 2),
              at(b, 10, in: "Tt "), let hour = digits(11, 2), byte(13, ":"), let minute = digits(14, 2), byte(16, ":"),
              let second = digits(17, 2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        var i = 19
        var fraction = 0.0
        if byte(i, ".") {
            i += 1
            var scale = 0.1
            let start = i
            while i < b.count, b[i] >= 48 && b[i] <= 57 {
                fraction += Double(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        var offset = 0
        if at(b, i, in: "Zz") {
            i += 1
        } else if at(b, i, in: "+-"), let h = digits(i + 1, 2), byte(i + 3, ":"), let m = digits(i + 4, 2), h < 24,
            m < 60
        {
            offset = (h * 3600 + m * 60) * (b[i] == UInt8(ascii: "-") ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Double(days * 86400 + hour * 3600 + minute * 60 + second - offset) + fraction
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// `HOST:PORT`, `[v6]:PORT` or `:PORT` (127.0.0.1).
    static func metricsAddress(_ text: String, flag: String = "--metrics") throws(ArgumentError) -> MetricsAddress {
        guard let address = ArgumentScanner.hostPort(text) else {
            throw ArgumentError("\(flag) takes HOST:PORT (for example 127.0.0.1:9464 or :9464), not '\(text)'")
        }
        return MetricsAddress(host: address.host, port: address.port)
    }

    static func outputPath(_ flag: String, _ text: String) throws(ArgumentError) -> String {
        guard !text.isEmpty, !text.hasPrefix("-") || text == "-" else {
            throw ArgumentError("\(flag) needs a file name")
        }
        return text
    }

    private static func at(_ b: [UInt8], _ i: Int, in set: String) -> Bool {
        i < b.count && set.utf8.contains(b[i])
    }

    /// An HTTP token character (RFC 9110): what a method or header name may contain.
    static func isTokenByte(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(c)
        }
    }
}
