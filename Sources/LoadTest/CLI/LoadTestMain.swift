import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc

/// Runs a ``LoadProtocol`` as its own load generator: the same command line as `loadtest tcp` (without the
/// requests and framing, which the protocol gives), the same report, JSON, SVG, HdrHistogram log, Prometheus
/// metrics, thresholds and exit status.
///
/// ```swift
/// LoadTestTool.main(MQTTPublish())   // mqtt-load --port 1883 --connections 100 --rate 20k --json out.json
/// ```
public enum LoadTestTool {
    /// Parses `arguments` (default: the process's, after its name) for a run of `proto`, runs it, prints the
    /// report, writes the outputs asked for, and exits with loadtest's status (0 success, 1 errors, 2 could
    /// not start, 99 a threshold failed).
    public static func main<P: LoadProtocol>(_ proto: P, arguments: [String] = Array(CommandLine.arguments.dropFirst()))
        -> Never {
        exit(LoadTestMain.run(arguments, mode: mode(of: proto)))
    }

    /// The mode that runs `proto`: loadtest's request/response connections, and the protocol's own options
    /// beside loadtest's (each flag must be one loadtest does not take: a programmer's error otherwise).
    static func mode<P: LoadProtocol>(of proto: P) -> LoadMode {
        var mode = LoadMode.requestResponse(name: proto.name, summary: "") { config in
            proto.configured(by: config.protocolOptions)
        }
        guard !P.options.isEmpty else { return mode }
        let taken = Set(CommandLineParser.commonOptionEntries.map(\.flag) + mode.options.flatMap(\.flags))
            .union(CommandLineParser.aliases.keys).union(["--help", "--version"])
        for option in P.options {
            precondition(option.flag.hasPrefix("--") && !taken.contains(option.flag),
                         "\(proto.name): the option \(option.flag) is not a free flag: loadtest takes it, or it "
                            + "does not start with --")
        }
        mode.options.insert(ModeOptions(protocolOptions: P.options, of: proto), at: 0)
        return mode
    }
}

/// The `loadtest` program (and every ``LoadTestTool``): parse, run or merge, report, write the outputs, and
/// the exit status.
package enum LoadTestMain {
    /// Runs the command line `arguments` (after the program's name); `mode`: the one mode this program runs
    /// (a ``LoadProtocol``'s), nil for loadtest's own. Returns the exit status.
    package static func run(_ arguments: [String], mode: LoadMode? = nil) -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        if mode == nil, arguments.first == "compare" { return CompareCommand.run(Array(arguments.dropFirst())) }
        let command: Command
        do {
            command = try CommandLineParser.parse(arguments, mode: mode)
        } catch {
            complain("\(error)")
            return ExitStatus.couldNotRun
        }
        switch command {
        case .help:
            LoadRunner.printLine(mode.map(CommandLineParser.usage(for:)) ?? CommandLineParser.usage)
            return ExitStatus.success

        case .modeHelp(let named):
            LoadRunner.printLine(CommandLineParser.usage(of: named))
            return ExitStatus.success

        case .version:
            LoadRunner.printLine("\(mode?.name ?? "loadtest") \(EpollLoopVersion.current)")
            return ExitStatus.success

        case .merge(let inputs, let json, let svg, let quiet, let mixed, let thresholds):
            checkOutputPaths([json, svg])
            var results: [RunResult] = []
            for path in inputs {
                let bytes: [UInt8]
                do {
                    bytes = try FileIO.read(path)
                } catch {
                    complain("\(error)")
                    return ExitStatus.couldNotRun
                }
                do {
                    results.append(try RunResult.decode(Data(bytes)))
                } catch {
                    complain("\(path) is not a loadtest JSON result (\(RunResult.describeDecodingError(error)))")
                    return ExitStatus.couldNotRun
                }
            }
            var merged: RunResult
            do {
                merged = try RunResult.merge(results, allowMixed: mixed)
            } catch {
                complain("\(error)")
                return ExitStatus.couldNotRun
            }
            merged.checkThresholds(Threshold.forMerge(given: thresholds, results: results))
            if json == "-" || svg == "-" {
                if !quiet { printToStandardError(ReportText.report(merged)) }
            } else if !quiet || json == nil {
                LoadRunner.printLine(ReportText.report(merged))
            }
            return ExitStatus.of(merged, wroteOutputs: writeOutputs(merged, json: json, svg: svg), countErrors: false)

        case .run(let config):
            checkOutputPaths([config.jsonPath, config.svgPath, config.hdrLogPath])
            // With the JSON or SVG on standard output, everything else goes to standard error, and with --quiet
            // nothing does unless the run fails: a pod's log (both streams in one) is then the JSON alone.
            let outputTaken = config.jsonPath == "-" || config.svgPath == "-"
            let runner = LoadRunner(
                config: config, output: outputTaken ? printLineToStandardError : LoadRunner.printLine)
            let interrupts = SignalInterrupts(runner)
            let result: RunResult
            do {
                defer { interrupts.end() }
                result = try runner.run()
            } catch {
                complain("\(error)")
                return ExitStatus.couldNotRun
            }
            if outputTaken {
                if !config.quiet { printToStandardError(ReportText.report(result)) }  // the JSON has every figure
            } else {
                LoadRunner.printLine(ReportText.report(result))
            }
            let wrote = writeOutputs(result, json: config.jsonPath, svg: config.svgPath)
            return ExitStatus.of(result, wroteOutputs: wrote)
        }
    }

    /// Writes every byte to a descriptor.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n <= 0 { return }
            done += n
        }
    }

    /// Prints to standard error.
    static func complain(_ message: String) {
        var line = "loadtest: \(message)\n"
        line.withUTF8 { writeAll(2, UnsafeRawBufferPointer($0)) }
    }

    /// Prints to standard error, without a prefix.
    static func printToStandardError(_ text: String) {
        printLineToStandardError(text)
    }

    /// ``printToStandardError(_:)`` for any thread (the run's progress lines).
    static let printLineToStandardError: @Sendable (String) -> Void = { text in
        var line = text + "\n"
        line.withUTF8 { writeAll(2, UnsafeRawBufferPointer($0)) }
    }

    /// Writes the JSON and SVG a command asked for.
    static func writeOutputs(_ result: RunResult, json: String?, svg: String?) -> Bool {
        var ok = true
        if let json {
            do {
                try FileIO.write(result.jsonData(), to: json)
            } catch {
                complain("\(error)")
                ok = false
            }
        }
        if let svg {
            do {
                try FileIO.write(Array(SVGChart.render(result).utf8), to: svg)
            } catch {
                complain("\(error)")
                ok = false
            }
        }
        return ok
    }

    /// Exits with a one-line message if any of `paths` cannot be written: before the run, not after it.
    static func checkOutputPaths(_ paths: [String?]) {
        for path in paths.compactMap({ $0 }) {
            if let problem = FileIO.problemWriting(path) {
                complain(problem)
                exit(ExitStatus.couldNotRun)
            }
        }
    }
}

/// Ctrl-C (or SIGTERM) ends the window early while a run goes; the report still covers what was measured. The
/// handlers run on a dispatch queue. ``end()`` puts the signals' earlier dispositions back: a run made inside
/// another program (a test that runs the command line in its own process) must not leave SIGINT and SIGTERM
/// ignored there, nor in every program it starts afterwards, since an ignored signal stays ignored across
/// `exec` (a child that ignores SIGTERM is only stopped by SIGKILL).
struct SignalInterrupts {
    private let sources: [any DispatchSourceSignal]
    private let previous: [(signal: Int32, handler: __sighandler_t?)]

    init(_ runner: LoadRunner) {
        var sources: [any DispatchSourceSignal] = []
        var previous: [(signal: Int32, handler: __sighandler_t?)] = []
        for sig in [SIGINT, SIGTERM] {
            previous.append((sig, signal(sig, SIG_IGN)))
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { @Sendable in runner.interrupt() }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
        self.previous = previous
    }

    /// The run is over: the signals do what they did before it.
    func end() {
        for source in sources { source.cancel() }
        for (sig, handler) in previous { signal(sig, handler) }
    }
}
