import LoadTest

/// The settings every example starts from, chosen to hold on a shared 2-core machine under a load average of
/// 20: few connections and one client loop (the machine has no core to spare), a warm-up so that connection
/// setup and first-touch page faults stay out of the window, short windows, and limits far from what a quiet
/// machine measures, but close enough that a broken server (errors, stalls, a lost reply) fails them.
enum PerfSettings {
    /// A closed-loop configuration: `connections` connections, each with one request in flight.
    static func closedLoop(_ mode: LoadTest.Mode, port: UInt16, connections: Int = 4) -> LoadTest.Configuration {
        var configuration = mode == .http
            ? LoadTest.Configuration(mode: .http, url: "http://127.0.0.1:\(port)/")
            : LoadTest.Configuration(mode: mode, port: port)
        configuration.connections = connections
        configuration.loops = 1
        configuration.warmup = .milliseconds(500)
        configuration.duration = .seconds(2)
        // A reply slower than this counts as an error (`timeout`), which the tests assert there are none of.
        configuration.timeout = .seconds(5)
        return configuration
    }

    /// An open-loop configuration: `rate` requests per second in total, whatever the server's speed.
    static func openLoop(_ mode: LoadTest.Mode, port: UInt16, rate: Double) -> LoadTest.Configuration {
        var configuration = closedLoop(mode, port: port)
        configuration.rate = rate
        return configuration
    }

    /// Runs `configuration` `times` times and keeps the fastest run: the noise of a shared machine only ever
    /// slows a run down, so the best of a few is the steadiest estimate of what the code can do.
    static func best(of times: Int, _ configuration: LoadTest.Configuration) async throws -> LoadTest.Report {
        var best: LoadTest.Report?
        for _ in 0..<times {
            let report = try await LoadTest.run(configuration)
            if best.map({ report.requestsPerSecond > $0.requestsPerSecond }) ?? true { best = report }
        }
        return best!
    }
}
