import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc
import Synchronization

/// `--server-metrics HOST:PORT`: the server's own event-loop figures over the measured window, from the
/// Prometheus text an EpollLoop server serves at `GET /metrics` (`LoopMetrics.prometheusText`).
///
/// Only the series such a server emits are read: `epoll_loop_busy_seconds_total`,
/// `epoll_loop_wait_seconds_total`, `epoll_loop_iterations_total`, `epoll_loop_stalls_total` and the
/// `epoll_loop_lag_seconds` histogram, each labelled `loop="<name>"`; every other line is skipped.
enum ServerLoopMetrics {
    /// One loop's counters as one scrape read them.
    struct Loop: Equatable {
        var busySeconds = 0.0
        var waitSeconds = 0.0
        var iterations: UInt64 = 0
        var stalls: UInt64 = 0
        /// Cumulative `le` bucket counts, keyed by the bound in seconds (`+Inf` as `.infinity`).
        var lagBuckets: [Double: UInt64] = [:]
        var lagSumSeconds = 0.0
        var lagCount: UInt64 = 0
    }

    /// A scrape: the loops by name, in the page's order.
    struct Scrape: Equatable {
        var names: [String] = []
        var loops: [String: Loop] = [:]
    }

    // MARK: Parsing

    /// The loops' series in `page`; lines of other metrics and comments are skipped, as are malformed ones.
    static func parse(_ page: String) -> Scrape {
        var scrape = Scrape()
        for line in page.split(separator: "\n") where !line.hasPrefix("#") {
            guard let brace = line.firstIndex(of: "{"), let close = line.lastIndex(of: "}"), brace < close else {
                continue
            }
            let name = line[..<brace]
            guard name.hasPrefix("epoll_loop_"),
                  let text = line[line.index(after: close)...].split(separator: " ").first,  // a timestamp may follow
                  let value = Double(text) else { continue }
            let labels = Self.labels(line[line.index(after: brace)..<close])
            guard let loop = labels["loop"] else { continue }
            if scrape.loops[loop] == nil {
                scrape.names.append(loop)
                scrape.loops[loop] = Loop()
            }
            let count = value >= 0 && value < 1.8e19 ? UInt64(value) : 0
            switch name {
            case "epoll_loop_busy_seconds_total": scrape.loops[loop]!.busySeconds = value
            case "epoll_loop_wait_seconds_total": scrape.loops[loop]!.waitSeconds = value
            case "epoll_loop_iterations_total": scrape.loops[loop]!.iterations = count
            case "epoll_loop_stalls_total": scrape.loops[loop]!.stalls = count
            case "epoll_loop_lag_seconds_sum": scrape.loops[loop]!.lagSumSeconds = value
            case "epoll_loop_lag_seconds_count": scrape.loops[loop]!.lagCount = count
            case "epoll_loop_lag_seconds_bucket":
                guard let le = labels["le"], let bound = le == "+Inf" ? .infinity : Double(le) else { continue }
                scrape.loops[loop]!.lagBuckets[bound] = count
            default: continue
            }
        }
        return scrape
    }

    /// `name="value",…` with the format's escapes (`\\`, `\"`, `\n`) undone.
    static func labels(_ text: Substring) -> [String: String] {
        var result: [String: String] = [:]
        var i = text.startIndex
        while i < text.endIndex {
            guard let eq = text[i...].firstIndex(of: "="), text.index(after: eq) < text.endIndex,
                  text[text.index(after: eq)] == "\"" else { break }
            let name = String(text[i..<eq].filter { $0 != " " })
            var value = ""
            var j = text.index(eq, offsetBy: 2)
            while j < text.endIndex && text[j] != "\"" {
                if text[j] == "\\", text.index(after: j) < text.endIndex {
                    j = text.index(after: j)
                    value.append(text[j] == "n" ? "\n" : text[j])
                } else {
                    value.append(text[j])
                }
                j = text.index(after: j)
            }
            result[name] = value
            guard j < text.endIndex else { break }
            i = text.index(after: j)
            if i < text.endIndex && text[i] == "," { i = text.index(after: i) }
        }
        return result
    }

    // MARK: The window

    /// The figures from `before` to `after` (two scrapes of the server at `source`): per loop, in the page's
    /// order, and for all loops together. Nil when `after` has no loop series.
    static func window(from before: Scrape, to after: Scrape, source: String) -> RunResult.ServerLoops? {
        guard !after.names.isEmpty else { return nil }
        var loops: [RunResult.ServerLoop] = []
        var total = Loop()
        for name in after.names {
            let a = after.loops[name]!
            // A loop the first scrape did not see (started later) counts from zero.
            let b = before.loops[name] ?? Loop()
            var d = Loop()
            d.busySeconds = max(0, a.busySeconds - b.busySeconds)
            d.waitSeconds = max(0, a.waitSeconds - b.waitSeconds)
            d.iterations = a.iterations &- min(a.iterations, b.iterations)
            d.stalls = a.stalls &- min(a.stalls, b.stalls)
            d.lagCount = a.lagCount &- min(a.lagCount, b.lagCount)
            d.lagSumSeconds = max(0, a.lagSumSeconds - b.lagSumSeconds)
            for (bound, count) in a.lagBuckets { d.lagBuckets[bound] = count &- min(count, b.lagBuckets[bound] ?? 0) }
            loops.append(figures(name, d))
            total.busySeconds += d.busySeconds
            total.waitSeconds += d.waitSeconds
            total.iterations &+= d.iterations
            total.stalls &+= d.stalls
            total.lagCount &+= d.lagCount
            total.lagSumSeconds += d.lagSumSeconds
            for (bound, count) in d.lagBuckets { total.lagBuckets[bound, default: 0] &+= count }
        }
        return RunResult.ServerLoops(source: source, all: figures("all", total), loops: loops)
    }

    private static func figures(_ name: String, _ d: Loop) -> RunResult.ServerLoop {
        let time = d.busySeconds + d.waitSeconds
        let bounds = d.lagBuckets.keys.sorted()
        /// The smallest `le` bound holding the rank of `q`, µs; nil when it is only `+Inf` (or no samples).
        func percentile(_ q: Double) -> Double? {
            guard d.lagCount > 0 else { return nil }
            let rank = max(1, UInt64((q * Double(d.lagCount)).rounded(.up)))
            guard let bound = bounds.first(where: { d.lagBuckets[$0]! >= rank }), bound.isFinite else { return nil }
            return (bound * 1e6 * 1000).rounded() / 1000
        }
        let lag = RunResult.ServerLag(
            count: d.lagCount,
            meanUs: d.lagCount > 0 ? (d.lagSumSeconds / Double(d.lagCount) * 1e6 * 1000).rounded() / 1000 : nil,
            p50Us: percentile(0.5), p90Us: percentile(0.9), p99Us: percentile(0.99), p99_9Us: percentile(0.999))
        return RunResult.ServerLoop(
            loop: name, utilisation: time > 0 ? (d.busySeconds / time * 10_000).rounded() / 10_000 : 0,
            busySeconds: (d.busySeconds * 1e6).rounded() / 1e6, waitSeconds: (d.waitSeconds * 1e6).rounded() / 1e6,
            iterations: d.iterations, stalls: d.stalls, lag: lag)
    }

    // MARK: Fetching

    /// The body of `GET /metrics` from `address`, over a plain blocking socket (call it off the loops: it
    /// resolves the name and waits). Every step is bounded by `timeout` seconds in all.
    static func fetch(_ address: MetricsAddress, timeout: Double) throws(LoadTestError) -> String {
        let source = "http://\(address.host.contains(":") ? "[\(address.host)]" : address.host):\(address.port)/metrics"
        func failure(_ what: String) -> LoadTestError {
            LoadTestError("--server-metrics: cannot read \(source): \(what)")
        }
        let deadline = Deadline.now().uptimeNanoseconds + LoadRunner.nanos(timeout)
        let server: ServerAddress
        do {
            server = try ServerAddress.resolve(host: address.host, port: address.port)
        } catch {
            throw failure(error.message)
        }
        let fd = socket(server.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure(String(cString: strerror(errno))) }
        defer { close(fd) }
        // SO_SNDTIMEO bounds connect and send on Linux, SO_RCVTIMEO each recv; the deadline bounds the whole.
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard server.withSockaddr({ connect(fd, $0, $1) }) == 0 else {
            throw failure("connect failed: " + String(cString: strerror(errno)))
        }
        let host = address.host.contains(":") ? "[\(address.host)]" : address.host
        let request = Array(
            "GET /metrics HTTP/1.1\r\nHost: \(host):\(address.port)\r\nAccept: text/plain\r\nConnection: close\r\n\r\n"
                .utf8)
        var sent = 0
        while sent < request.count {
            let n = request.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw failure(String(cString: strerror(errno))) }
            sent += n
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        var head: (HTTPResponseHead, bodyStart: Int)?
        while true {
            if let (h, start) = head, bytes.count - start >= h.bodyLength {
                guard h.status == 200 else { throw failure("HTTP status \(h.status)") }
                return String(decoding: bytes[start..<(start + h.bodyLength)], as: UTF8.self)
            }
            guard Deadline.now().uptimeNanoseconds < deadline else {
                throw failure("no complete answer within \(timeout) s")
            }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw failure(
                    n == 0 ? "the connection closed before the answer was complete" : String(cString: strerror(errno)))
            }
            bytes += chunk[0..<n]
            guard bytes.count <= 64 << 20 else { throw failure("the page is larger than 64 MiB") }
            if head == nil, let end = Self.headEnd(bytes) {
                guard
                    let parsed = bytes.withUnsafeBytes({
                        HTTPResponseHead.parse(UnsafeRawBufferPointer(rebasing: $0[0..<end]))
                    }),
                    !parsed.chunked
                else { throw failure("not an HTTP/1.1 response with Content-Length") }
                head = (parsed, end)
            }
        }
    }

    /// The index just past the head's CRLF CRLF, if it has arrived.
    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4)
        where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }

    /// `fetch` and `parse`, throwing when the page has no loop series (not an EpollLoop server's page).
    static func scrape(_ address: MetricsAddress, timeout: Double) throws(LoadTestError) -> Scrape {
        let scrape = parse(try fetch(address, timeout: timeout))
        guard !scrape.names.isEmpty else {
            throw LoadTestError("--server-metrics: \(address.host):\(address.port)/metrics has no epoll_loop_* "
                + "series: is it an EpollLoop server's metrics page?")
        }
        return scrape
    }
}

/// The two scrapes of a run, each on a helper thread so that neither the coordinator's ticks nor the loops
/// wait for the server's answer.
final class ServerLoopWindow: Sendable {
    private let address: MetricsAddress
    private let timeout: Double
    private let scrapes = Mutex<[Result<ServerLoopMetrics.Scrape, LoadTestError>?]>([nil, nil])
    private let done = DispatchGroup()
    /// Serial: the end's scrape starts after the start's has finished, however short the window.
    private let queue = DispatchQueue(label: "loadtest.server-metrics")

    /// Scrapes `address`, each scrape within `timeout` seconds.
    init(address: MetricsAddress, timeout: Double) {
        self.address = address
        self.timeout = timeout
    }

    /// Starts the scrape at the window's start (`index` 0) or end (1).
    func begin(_ index: Int) {
        done.enter()
        queue.async { [self] in
            let result: Result<ServerLoopMetrics.Scrape, LoadTestError>
            do throws(LoadTestError) {
                result = .success(try ServerLoopMetrics.scrape(address, timeout: timeout))
            } catch {
                result = .failure(error)
            }
            scrapes.withLock { $0[index] = result }
            done.leave()
        }
    }

    /// Waits (bounded) for the scrapes and gives the window's figures, or the reason there are none.
    func finish() -> Result<RunResult.ServerLoops, LoadTestError> {
        _ = done.wait(timeout: .now() + .nanoseconds(Int(LoadRunner.nanos(2 * timeout + 1))))
        let (before, after) = scrapes.withLock { ($0[0], $0[1]) }
        let source = "\(address.host.contains(":") ? "[\(address.host)]" : address.host):\(address.port)"
        switch (before, after) {
        case (.success(let b), .success(let a)):
            guard let window = ServerLoopMetrics.window(from: b, to: a, source: source) else {
                return .failure(LoadTestError("--server-metrics: the last scrape of \(source) had no loops"))
            }
            return .success(window)
        case (.failure(let error), _), (_, .failure(let error)):
            return .failure(error)
        default:
            return .failure(LoadTestError("--server-metrics: \(source) did not answer within \(timeout) s"))
        }
    }
}
