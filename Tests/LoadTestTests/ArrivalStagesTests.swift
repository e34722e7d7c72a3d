import Foundation
import XCTest
@testable import LoadTest

/// `--stages`: the rate profile's arithmetic, the schedule it gives the pacer (driven by a manual clock), the
/// per-stage figures, and a real run.
final class ArrivalStagesTests: XCTestCase {
    func testParseAndTheRateProfile() throws {
        let s = try ArrivalStages.parse("10s:1k,30s:20k,10s:0")
        XCTAssertEqual(s.stages, [.init(duration: 10, target: 1000), .init(duration: 30, target: 20_000), .init(duration: 10, target: 0)])
        XCTAssertEqual(s.starts, [0, 10, 40])
        XCTAssertEqual(s.fromRates, [0, 1000, 20_000])
        XCTAssertEqual(s.duration, 50)
        XCTAssertEqual(s.text, "10s:1000,30s:20000,10s:0")
        // k6's ramping-arrival-rate: linear from the previous target to this one.
        XCTAssertEqual(s.rate(at: 0), 0)
        XCTAssertEqual(s.rate(at: 5), 500)
        XCTAssertEqual(s.rate(at: 10), 1000)
        XCTAssertEqual(s.rate(at: 25), 10_500)
        XCTAssertEqual(s.rate(at: 45), 10_000)
        XCTAssertEqual(s.rate(at: 50), 0)
        // Arrivals: the areas under the ramps: 5,000 + 315,000 + 100,000.
        XCTAssertEqual(s.arrivals(at: 10), 5000, accuracy: 1e-6)
        XCTAssertEqual(s.arrivals(at: 40), 320_000, accuracy: 1e-6)
        XCTAssertEqual(s.totalArrivals, 420_000, accuracy: 1e-6)
        XCTAssertEqual(s.meanRate, 8400, accuracy: 1e-9)
        XCTAssertEqual(s.peakRate, 20_000)
        XCTAssertEqual(s.meanRate(from: 0, to: 10), 500, accuracy: 1e-9)
        XCTAssertEqual(s.meanRate(from: 40, to: 50), 10_000, accuracy: 1e-9)

        // A hold, a jump (0 s stage) and a pause.
        let steps = try ArrivalStages.parse("0s:100,2s:100,1s:0,0s:50,2s:50")
        XCTAssertEqual(steps.rate(at: 1), 100)
        XCTAssertEqual(steps.rate(at: 2.5), 50)
        XCTAssertEqual(steps.rate(at: 3.5), 50)
        XCTAssertEqual(steps.totalArrivals, 200 + 50 + 100, accuracy: 1e-9)

        for bad in ["10s", "10s:1k,", "x:1k", "10s:-5", "10s:fast", "0s:10", "10s:0"] {
            XCTAssertThrowsError(try ArrivalStages.parse(bad), bad)
        }
    }

    func testTheTimeOfEachArrivalInvertsTheCount() throws {
        let s = try ArrivalStages.parse("10s:1k,30s:20k,10s:0,5s:0,5s:3k")
        XCTAssertEqual(s.time(ofArrival: 0), 0)
        XCTAssertEqual(try XCTUnwrap(s.time(ofArrival: 5000)), 10, accuracy: 1e-9)
        XCTAssertEqual(try XCTUnwrap(s.time(ofArrival: 1250)), 5, accuracy: 1e-9, "a quarter of the ramp's arrivals at half its time")
        // After the pause, the next arrival waits for the rate to rise again (at 55 s).
        XCTAssertEqual(try XCTUnwrap(s.time(ofArrival: 420_000)), 55, accuracy: 1e-9)
        XCTAssertNil(s.time(ofArrival: s.totalArrivals + 1))
        for n in stride(from: 0.5, to: s.totalArrivals, by: 997.3) {
            let t = try XCTUnwrap(s.time(ofArrival: n))
            XCTAssertEqual(s.arrivals(at: t), n, accuracy: 1e-6 * max(1, n), "arrival \(n) at \(t)")
        }
    }

    func testThePacerFollowsTheStages() throws {
        // A manual clock stepping 1 ms: the pacer hands out the ramp's requests second by second, and exactly the
        // stages' total by the end (this loop's share: half).
        let stages = try ArrivalStages.parse("2s:1000,2s:1000,1s:0")
        var pacer = StagePacer(stages: stages, share: 0.5, start: 1_000)
        var perSecond = [Int](repeating: 0, count: 6)
        var clock: UInt64 = 0
        while clock < 6_000_000_000 {
            clock += 1_000_000
            XCTAssertEqual(pacer.due(at: clock + 1_000), {
                var copy = pacer
                var n: UInt64 = 0
                while copy.next(now: clock + 1_000) != nil { n += 1 }
                return n
            }())
            while let t = pacer.next(now: clock + 1_000) {
                XCTAssertLessThanOrEqual(t, clock + 1_000)
                perSecond[Int((t - 1_000) / 1_000_000_000)] += 1
            }
        }
        // Ramp 0 → 1,000/s: 500 arrivals in 2 s (250, then 750 in the second second), halved; hold: 500 a second.
        XCTAssertEqual(perSecond, [125, 375, 500, 500, 250, 0])
        XCTAssertEqual(pacer.issued, 1750)
        XCTAssertEqual(pacer.nextIntendedTime, .max, "nothing after the last stage")
    }

    func testCommandLine() throws {
        guard case .run(let config) = try CommandLineParser.parse(["http", "--url", "http://127.0.0.1:8080/", "--stages", "10s:1k,30s:20k,10s:0"]) else {
            return XCTFail()
        }
        XCTAssertEqual(config.stages?.stages.count, 3)
        XCTAssertEqual(config.duration, 50)
        XCTAssertEqual(config.warmup, 0)
        XCTAssertEqual(try XCTUnwrap(config.rate), 8400, accuracy: 1e-9)
        XCTAssertTrue(config.isOpenLoop)
        for (extra, message) in [(["--rate", "1k"], "leave out --rate"), (["-d", "5"], "leave out --duration"), (["--warmup", "1"], "leave out --warmup"),
                                 (["--pipeline", "2"], "--rate and --pipeline")] {
            XCTAssertThrowsError(try CommandLineParser.parse(["echo", "--port", "9", "--stages", "1s:10"] + extra)) { error in
                XCTAssertTrue("\(error)".contains(message), "\(error)")
            }
        }
        XCTAssertThrowsError(try CommandLineParser.parse(["idle", "--port", "9", "--stages", "1s:10"]))
        XCTAssertThrowsError(try CommandLineParser.parse(["echo", "--port", "9", "--stages", "1s"])) { error in
            XCTAssertTrue("\(error)".contains("DURATION:RATE"), "\(error)")
        }
    }

    func testTheRecorderTakesEachStageAtItsEnd() throws {
        // Driven by hand: the coordinator's ticks fall on the stage ends, and each stage gets what arrived in it.
        let stages = try ArrivalStages.parse("1s:100,2s:100,1s:0")
        let s0: UInt64 = 1_000_000_000
        let recorder = StageRecorder(stages: stages, loadStart: s0, start: WorkerSnapshot())
        XCTAssertEqual(recorder.nextTick(after: s0, planned: s0 + 2_000_000_000), s0 + 1_000_000_000)
        XCTAssertEqual(recorder.nextTick(after: s0 + 1_000_000_000, planned: s0 + 2_000_000_000), s0 + 2_000_000_000)
        XCTAssertEqual(recorder.nextTick(after: s0 + 2_000_000_000, planned: s0 + 3_500_000_000), s0 + 3_000_000_000)
        XCTAssertFalse(recorder.stageEnded(by: s0 + 999_999_999))
        XCTAssertTrue(recorder.stageEnded(by: s0 + 1_000_000_000))

        var histogram = Histogram()
        var totals = WorkerSnapshot()
        histogram.record(1_000_000, times: 50)   // 1 ms in the ramp
        totals.errors = 1
        recorder.take(at: s0 + 1_000_000_000, totals: totals, histogram: histogram)
        histogram.record(3_000_000, times: 200)  // 3 ms in the hold
        totals.errors = 3
        XCTAssertFalse(recorder.stageEnded(by: s0 + 2_000_000_000))
        recorder.take(at: s0 + 3_000_000_000, totals: totals, histogram: histogram)
        // The run is cut halfway through the last stage.
        histogram.record(2_000_000, times: 20)
        recorder.take(at: s0 + 3_500_000_000, totals: totals, histogram: histogram, cut: true)
        let f = recorder.figures
        XCTAssertEqual(f.map(\.stage), ["1s:100", "2s:100", "1s:0"])
        XCTAssertEqual(f.map(\.figures.requests), [50, 200, 20])
        XCTAssertEqual(f.map(\.figures.errors), [1, 2, 0])
        XCTAssertEqual(f.map(\.durationSeconds), [1, 2, 0.5])
        XCTAssertEqual(f.map(\.figures.requestsPerSecond), [50, 100, 40])
        XCTAssertEqual(f.map(\.targetRate), [50, 100, 75])
        XCTAssertEqual(f.map(\.fromRate), [0, 100, 100])
        XCTAssertEqual(f.map(\.toRate), [100, 100, 0])
        XCTAssertEqual(f[1].figures.latencyUs.p50, 3000, accuracy: 3000 / 200)
        XCTAssertEqual(f[1].figures.latencyUs.count, 200)

        var result = ThresholdTests.result()
        result.stages = f
        result.targetRate = stages.meanRate
        // A threshold may judge one stage.
        result.checkThresholds(try ["rate{stage:2}>=100", "p50{stage:2}<2ms", "requests{stage:3}==20", "p99{stage:4}<1s"].map(Threshold.parse))
        XCTAssertEqual(result.thresholds?.map(\.passed), [true, false, true, false])
        result.thresholds = nil
        let text = ReportText.report(result)
        XCTAssertTrue(text.contains("open loop in 3 stages, 75/s mean target"), text)
        XCTAssertTrue(text.contains("stages (rate target → achieved):"), text)
        XCTAssertTrue(text.contains("1. 1s:100 (0 → 100/s) at 0.0 s: 50/s → 50/s (50), p50 "), text)
        XCTAssertTrue(text.contains("2. 2s:100 (hold 100/s) at 1.0 s: 100/s → 100/s (200), p50 3.00 ms"), text)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: result.jsonData()) as? [String: Any])
        let list = try XCTUnwrap(json["stages"] as? [[String: Any]])
        XCTAssertEqual(list[2]["target_rate"] as? Double, 75)
        XCTAssertEqual(list[2]["duration_s"] as? Double, 0.5)
        XCTAssertNotNil(list[0]["histogram"])
        XCTAssertEqual(try RunResult.decode(result.jsonData()), result)
        // The chart draws the target beside the achieved rate.
        result.timeline = (1...4).map { RunResult.Sample(t: Double($0), requestsPerSecond: 40, mibPerSecond: 0, connections: 1, errors: 0, warmup: false) }
        result.timeline[0].targetRate = 50
        let svg = SVGChart.render(result)
        XCTAssertTrue(svg.contains("Throughput over time (requests/s), target dashed"), svg)
        XCTAssertTrue(svg.contains("stroke-dasharray=\"6 4\""), svg)
        XCTAssertTrue(svg.contains("open loop in 3 stages (75/s mean)"), svg)
        XCTAssertTrue(svg.contains(">2</text>") && svg.contains(">3</text>"), "the stages' starts are marked: \(svg)")
        // merge adds the stages up one by one.
        let merged = try RunResult.merge([result, result])
        XCTAssertEqual(merged.stages?.map(\.figures.requests), [100, 400, 40])
        XCTAssertEqual(merged.stages?.map(\.targetRate), [100, 200, 150])
        XCTAssertEqual(merged.stages?[1].figures.latencyUs.count, 400)
    }

    func testARunRampsAndReportsEachStageAndTheTargetTimeline() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let result = try shortRun(.echo, port: server.port, connections: 4, duration: 1) {
            $0.stages = try? ArrivalStages.parse("0.5s:400,0.5s:400,0.5s:0")
            $0.rate = $0.stages?.meanRate
            $0.duration = 1.5
            $0.warmup = 0
        }
        let stages = try XCTUnwrap(result.stages)
        XCTAssertEqual(stages.count, 3)
        // 100 + 200 + 100 requests are due; the ones due near a stage's end may answer in the next.
        XCTAssertEqual(stages.map(\.figures.requests).reduce(0, +), result.requests)
        XCTAssertEqual(Double(result.requests), 400, accuracy: 8)
        XCTAssertEqual(Double(stages[1].figures.requests), 200, accuracy: 20)
        XCTAssertEqual(stages[1].targetRate, 400, accuracy: 1e-9)
        XCTAssertEqual(stages[0].targetRate, 200, accuracy: 1e-9)
        // The timeline has a tick at each stage end, with the target beside the achieved rate.
        XCTAssertEqual(result.timeline.map(\.t).map { ($0 * 2).rounded() / 2 }, [0.5, 1, 1.5])
        XCTAssertEqual(try XCTUnwrap(result.timeline[1].targetRate), 400, accuracy: 20)
        XCTAssertEqual(result.errors.total, 0)
    }

    func testAnInterruptedRunCutsTheStageItWasIn() throws {
        // Ctrl-C (interrupt()) once the first stage has been taken: the second stage ends there, the third never
        // began and is left out. The interrupt comes just after a progress line, where the coordinator decides
        // whether to stop: the window must be cut all the same.
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        var config = LoadConfig(mode: .echo)
        config.port = server.port
        config.connections = 2
        config.loops = 1
        config.stages = try ArrivalStages.parse("0.3s:100,20s:100,20s:100")
        config.rate = config.stages?.meanRate
        config.duration = 40.3
        config.warmup = 0
        let lines = LineCollector()
        let runner = LoadRunner(config: config, output: { lines.add($0) })
        let run = BackgroundRun(runner)
        let finished = run.finished, outcome = run.outcome
        XCTAssertNotNil(lines.wait(for: "[  0.3s]", seconds: 20), "the tick at the first stage's end")
        XCTAssertNotNil(lines.wait(for: "[  1.3s]", seconds: 20))
        runner.interrupt()
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success)
        let result = try XCTUnwrap(outcome.value).get()
        let stages = try XCTUnwrap(result.stages)
        XCTAssertEqual(stages.map(\.stage), ["0.3s:100", "20s:100"])
        XCTAssertEqual(stages[0].durationSeconds, 0.3, accuracy: 1e-9)
        XCTAssertLessThan(stages[1].durationSeconds, 19)
        XCTAssertEqual(stages[0].durationSeconds + stages[1].durationSeconds, result.durationSeconds, accuracy: 1e-6)
        XCTAssertEqual(stages.map(\.figures.requests).reduce(0, +), result.requests)
        XCTAssertNil(result.warnings, "an interrupted run does not warn about its rate")
    }

    func testTheMetricsEndpointPublishesTheTargetOfTheMoment() throws {
        var config = LoadConfig(mode: .echo)
        config.stages = try ArrivalStages.parse("10s:1k")
        config.rate = config.stages?.meanRate
        let now = MetricsEndpoint.text(config: config, totals: WorkerSnapshot(), errors: ErrorCounts(), histogram: nil, targetRate: 750)
        XCTAssertTrue(now.contains("loadtest_target_rate{mode=\"echo\"} 750.0\n"), now)
        let before = MetricsEndpoint.text(config: config, totals: WorkerSnapshot(), errors: ErrorCounts(), histogram: nil)
        XCTAssertTrue(before.contains("loadtest_target_rate{mode=\"echo\"} 500.0\n"), before)
    }
}
