import Dispatch
import Synchronization

/// A load run as a Swift call: the `loadtest` command's engine, configured in code, for perf tests and tools.
///
/// Build a ``Configuration`` (the same defaults and checks as the command line), `await` ``run(_:progress:)``,
/// and assert on the ``Report`` it returns; compare sets of reports with ``compare(base:new:confidence:)``.
///
/// ```swift
/// var configuration = LoadTest.Configuration(mode: .echo, port: server.port)
/// configuration.connections = 10
/// configuration.duration = .seconds(2)
/// let report = try await LoadTest.run(configuration)
/// XCTAssertEqual(report.errors.total, 0)
/// XCTAssertGreaterThan(report.requestsPerSecond, 1000)
/// ```
public enum LoadTest {
    /// Runs the load `configuration` describes and returns its report; `progress` is handed each second's
    /// figures as the run goes (warm-up seconds included, on a thread of the run's own).
    ///
    /// The run's blocking work happens on a thread of its own, never on the caller's executor. Cancelling the
    /// calling task ends the run: once the load has begun, the measuring window is cut there and the report
    /// covers what was measured (``Report/wasCancelled`` is then true); before it began (while the connections
    /// open), or when the task was cancelled before the call, the call throws `CancellationError`.
    ///
    /// Throws ``ConfigurationError`` for a configuration the command line would refuse (with the command line's
    /// message) and ``RunError`` for a run that could not start or stopped early (no server at the address,
    /// every connection refused or closed before a reply).
    public static func run(
        _ configuration: Configuration, progress: (@Sendable (Sample) -> Void)? = nil
    ) async throws -> Report {
        try Task.checkCancellation()
        let config = try configuration.loadConfig()
        var samples: (@Sendable (RunResult.Sample) -> Void)?
        if let progress { samples = { sample in progress(Sample(sample)) } }
        let runner = LoadRunner(config: config, output: { _ in }, progress: samples, group: configuration.group)
        let cancelled = Atomic<Bool>(false)
        let outcome: Result<RunResult, any Error> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                DispatchQueue(label: "LoadTest.run").async {
                    continuation.resume(returning: Result { try runner.run() })
                }
            }
        } onCancel: {
            cancelled.store(true, ordering: .releasing)
            runner.interrupt()
        }
        let wasCancelled = cancelled.load(ordering: .acquiring)
        switch outcome {
        case .success(let result):
            // `--json` and `--svg` among the arguments write their files, as the command does.
            if let path = config.jsonPath { try FileIO.write(result.jsonData(), to: path) }
            if let path = config.svgPath { try FileIO.write(Array(SVGChart.render(result).utf8), to: path) }
            return Report(result, wasCancelled: wasCancelled)
        case .failure(let error as LoadTestError):
            if wasCancelled { throw CancellationError() }
            throw RunError(message: error.message)
        case .failure(let error):
            if wasCancelled { throw CancellationError() }
            throw RunError(message: "\(error)")
        }
    }
}
