@testable import LoadTest

/// A short, quiet run of `mode` against `host`:`port` on one client loop: the settings every test starts
/// from (a 5 s reply timeout, 0.1 s warm-up), then the test's own changes in `adjust`.
func shortRun(
    _ mode: LoadMode, host: String = "127.0.0.1", port: UInt16, connections: Int, duration: Double,
    _ adjust: (inout LoadConfig) -> Void = { _ in }
) throws -> RunResult {
    var config = LoadConfig(mode: mode)
    config.host = host
    config.port = port
    config.connections = connections
    config.duration = duration
    config.warmup = 0.1
    config.loops = 1
    config.timeout = 5
    config.quiet = true
    adjust(&config)
    return try LoadRunner(config: config, output: { _ in }).run()
}
