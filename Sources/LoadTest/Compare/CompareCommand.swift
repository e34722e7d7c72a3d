import ExampleSupport
import FoundationEssentials
import Glibc

/// `loadtest compare`: its command line, and running it (read the reports, compare, print, write, exit status).
enum CompareCommand {
    /// What the command line asks for.
    struct Options: Equatable {
        /// Each side's report files (a directory given is read as its `*.json` files).
        var base: [String] = []
        var new: [String] = []
        var confidence = 0.95
        /// `--fail-if slower`: the figures that fail the command when slower; nil: none do.
        var gate: [CompareFigure]?
        var jsonPath: String?
        var svgPath: String?
        var quiet = false
        var help = false
    }

    static let usage = """
        usage: loadtest compare BASE NEW [OPTIONS]
               loadtest compare --base A1.json A2.json ... --new B1.json B2.json ... [OPTIONS]

        Whether NEW is faster or slower than BASE beyond the noise: for throughput, p50, p90, p99 and p99.9
        latency and the error rate, the change with its confidence interval and a verdict. BASE and NEW are
        each a loadtest JSON report or a directory of them (its *.json files). Give several runs per side
        (\(RunComparison.recommendedRuns) find a 5% change when runs vary by 4%): each run is one observation,
        and the interval is Welch's t on the log of the per-run figures. With one run per side the intervals
        come from within the runs and leave run-to-run noise out (said in a warning).

        Options:
          --base FILE...      the base side's reports (files or directories), up to the next option
          --new FILE...       the new side's reports
          --confidence P      the intervals' confidence: 95 or 0.95 (default 95 %; 50 to 99.99)
          --fail-if slower[:FIGURES]  exit status 1 when a figure got worse beyond the noise: any figure, or
                              only those listed (throughput,p50,p90,p99,p99.9,errors)
          --json FILE         write the comparison as JSON (- for standard output)
          --svg FILE          write a chart of each figure's change and interval
          --quiet             no table (with --json or --svg)                        [-q]
          --help                                                                     [-h]

        Exit status: 0 compared (and nothing --fail-if names got worse); 1 a figure --fail-if names got worse,
        or an output not written; 2 a command-line mistake or a report that cannot be read.
        """

    /// Parses the arguments after `compare`.
    static func parse(_ arguments: [String]) throws(ArgumentError) -> Options {
        var options = Options()
        var scanner = ArgumentScanner(arguments, aliases: ["-q": "--quiet", "-h": "--help"])
        var positional: [String] = []
        var side: WritableKeyPath<Options, [String]>?
        var named = false
        while let arg = scanner.next() {
            func value() throws(ArgumentError) -> String {
                guard let next = scanner.value() else { throw ArgumentError("\(arg) needs a value") }
                return next
            }
            func path() throws(ArgumentError) -> String {
                let text = try value()
                guard !text.isEmpty, !text.hasPrefix("-") || text == "-" else {
                    throw ArgumentError("\(arg) needs a file name")
                }
                return text
            }
            if !arg.hasPrefix("-") {
                if let side { options[keyPath: side].append(arg) } else { positional.append(arg) }
                continue
            }
            side = nil
            switch arg {
            case "--base":
                side = \.base
                named = true
            case "--new":
                side = \.new
                named = true
            case "--confidence":
                options.confidence = try confidence(try value())
            case "--fail-if":
                options.gate = try gate(try value())
            case "--json":
                options.jsonPath = try path()
            case "--svg":
                options.svgPath = try path()
            case "--quiet":
                options.quiet = true
            case "--help":
                options.help = true
                return options
            default:
                throw ArgumentError("unknown option '\(arg)' for compare (try loadtest compare --help)")
            }
        }
        let form = "loadtest compare BASE NEW, or loadtest compare --base A1.json A2.json --new B1.json B2.json"
        if named {
            guard positional.isEmpty else {
                throw ArgumentError("'\(positional[0])' belongs to no side: with --base and --new, name every "
                    + "report after one of them")
            }
            guard !options.base.isEmpty, !options.new.isEmpty else {
                throw ArgumentError("compare needs reports on both sides: \(form)")
            }
        } else {
            guard positional.count == 2 else {
                let given = positional.count == 0 ? "none" : "\(positional.count) given"
                throw ArgumentError("compare needs two sides, \(given): \(form)")
            }
            options.base = [positional[0]]
            options.new = [positional[1]]
        }
        if options.jsonPath == "-" && options.svgPath == "-" {
            throw ArgumentError("--json and --svg cannot both go to standard output")
        }
        return options
    }

    /// `95`, `99.9` (percent) or `0.95`.
    static func confidence(_ text: String) throws(ArgumentError) -> Double {
        let body = text.hasSuffix("%") ? String(text.dropLast()) : text
        guard let number = Double(body), number.isFinite else {
            throw ArgumentError("--confidence takes a percentage such as 95 or 99, or a fraction such as 0.95")
        }
        let fraction = number >= 1 ? number / 100 : number
        guard RunComparison.confidenceRange.contains(fraction) else {
            throw ArgumentError("--confidence must lie between 50 and 99.99 (percent)")
        }
        return fraction
    }

    /// `slower` (every figure) or `slower:throughput,p99`.
    static func gate(_ text: String) throws(ArgumentError) -> [CompareFigure] {
        let names = CompareFigure.allCases.map(\.rawValue).joined(separator: ",")
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts[0] == "slower" else {
            throw ArgumentError("--fail-if takes slower, or slower:FIGURES with FIGURES among \(names)")
        }
        guard parts.count == 2 else { return CompareFigure.allCases }
        var figures: [CompareFigure] = []
        for name in parts[1].split(separator: ",", omittingEmptySubsequences: false) {
            guard let figure = CompareFigure(rawValue: String(name)) else {
                throw ArgumentError("--fail-if: no figure '\(name)' (the figures: \(names))")
            }
            if !figures.contains(figure) { figures.append(figure) }
        }
        return figures
    }

    /// A side's report files: each file given, and each directory's `*.json` files in name order.
    static func files(_ paths: [String]) throws(ArgumentError) -> [String] {
        var files: [String] = []
        for path in paths {
            var info = stat()
            guard stat(path, &info) == 0 else {
                throw ArgumentError("cannot read \(path): \(String(cString: strerror(errno)))")
            }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                files.append(path)
                continue
            }
            guard let directory = opendir(path) else {
                throw ArgumentError("cannot read the directory \(path): \(String(cString: strerror(errno)))")
            }
            defer { closedir(directory) }
            var names: [String] = []
            while let entry = readdir(directory) {
                // Read through a pointer up to its zero: an entry is only as long as its name needs, so copying the
                // whole `d_name` field would read past it.
                let nameOffset = MemoryLayout<dirent>.offset(of: \.d_name)!
                let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
                if name.hasSuffix(".json") && !name.hasPrefix(".") { names.append(name) }
            }
            guard !names.isEmpty else { throw ArgumentError("the directory \(path) holds no .json reports") }
            files += names.sorted().map { path.hasSuffix("/") ? path + $0 : path + "/" + $0 }
        }
        return files
    }

    /// Runs `loadtest compare` with the arguments after `compare`; returns the exit status.
    static func run(_ arguments: [String]) -> Int32 {
        let options: Options
        let base: [String], new: [String]
        do {
            options = try parse(arguments)
            if options.help {
                LoadRunner.printLine(usage)
                return ExitStatus.success
            }
            base = try files(options.base)
            new = try files(options.new)
        } catch {
            LoadTestMain.complain("\(error)")
            return ExitStatus.couldNotRun
        }
        LoadTestMain.checkOutputPaths([options.jsonPath, options.svgPath])
        func read(_ paths: [String]) -> [RunResult]? {
            var runs: [RunResult] = []
            for path in paths {
                do {
                    runs.append(try RunResult.decode(Data(try FileIO.read(path))))
                } catch let error as FileIO.Failure {
                    LoadTestMain.complain("\(error)")
                    return nil
                } catch {
                    let why = RunResult.describeDecodingError(error)
                    LoadTestMain.complain("\(path) is not a loadtest JSON result (\(why))")
                    return nil
                }
            }
            return runs
        }
        guard let baseRuns = read(base), let newRuns = read(new) else { return ExitStatus.couldNotRun }
        let comparison: RunComparison
        do {
            comparison = try RunComparison(baseRuns: baseRuns, newRuns: newRuns, confidence: options.confidence)
        } catch {
            LoadTestMain.complain("\(error)")
            return ExitStatus.couldNotRun
        }
        var text = comparison.text
        let failed = options.gate.map(comparison.regressed(among:)) ?? []
        if let gate = options.gate {
            let judged = gate.count == CompareFigure.allCases.count
                ? "any figure" : gate.map(\.rawValue).joined(separator: ", ")
            text += "\n  --fail-if slower (\(judged)): "
                + (failed.isEmpty ? "passed" : "FAILED: \(failed.map(\.rawValue).joined(separator: ", ")) got worse")
        }
        let toStandardOutput = options.jsonPath == "-" || options.svgPath == "-"
        if !options.quiet || (options.jsonPath == nil && options.svgPath == nil) {
            if toStandardOutput { LoadTestMain.printToStandardError(text) } else { LoadRunner.printLine(text) }
        }
        var wrote = true
        if let json = options.jsonPath {
            do {
                let report = CompareReport(comparison, baseFiles: base, newFiles: new, gate: options.gate)
                try FileIO.write(try report.jsonData(), to: json)
            } catch {
                LoadTestMain.complain("\(error)")
                wrote = false
            }
        }
        if let svg = options.svgPath {
            do {
                try FileIO.write(Array(CompareChart.render(comparison).utf8), to: svg)
            } catch {
                LoadTestMain.complain("\(error)")
                wrote = false
            }
        }
        return failed.isEmpty && wrote ? ExitStatus.success : ExitStatus.errors
    }
}
