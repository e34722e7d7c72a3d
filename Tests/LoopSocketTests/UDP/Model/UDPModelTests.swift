import Foundation
import LoopSocket
import XCTest

/// GCDAsyncUdpSocket's behaviour pinned by random scripts checked against a reference model: sends with tags
/// and timeouts to an address, a host or the connected peer (and to the wrong kind, refused), receiving once
/// and continuously, pausing and resuming, receive and send filters inline and on a queue, a size limit,
/// close with sends still queued and close after sending, over IPv4 and IPv6, with callbacks inline or on a
/// delegate queue, against a raw peer that drops, duplicates and reorders what it sends.
///
/// Each case runs from its own seed; a failure prints `LOOPSOCKET_UDP_MODEL_SEED=<seed>`, which reruns exactly
/// that case. By default cases run for ``defaultSeconds``; `LOOPSOCKET_UDP_MODEL_SECONDS=3600` runs them for
/// an hour.
final class UDPModelTests: SocketTestCase {
    /// Seconds of cases in a default `swift test` run.
    static let defaultSeconds: TimeInterval = 8

    func testRandomScriptsAgainstTheReferenceModel() throws {
        let environment = ProcessInfo.processInfo.environment
        if let text = environment["LOOPSOCKET_UDP_MODEL_SEED"] {
            let seed = try XCTUnwrap(SocketModelTests.parseSeed(text), "LOOPSOCKET_UDP_MODEL_SEED=\(text) is not a 64-bit number")
            let script = UDPModelScript(seed: seed)
            print("UDPModelTests: case \(seed): \(script.setup)\n  " + script.steps.map(\.description).joined(separator: "\n  "))
            try runCase(script)
            return
        }
        let seconds = environment["LOOPSOCKET_UDP_MODEL_SECONDS"].flatMap(TimeInterval.init) ?? Self.defaultSeconds
        let base = UInt64.random(in: .min ... .max)
        print("UDPModelTests: base seed \(base), \(seconds) s of cases")
        let start = Date()
        var cases = 0, steps = 0
        var tally: [String: Int] = [:]
        while Date().timeIntervalSince(start) < seconds {
            let script = UDPModelScript(seed: SeededGenerator.caseSeed(base: base, index: cases))
            let runner = try runCase(script)
            tally.merge(runner.tally, uniquingKeysWith: +)
            cases += 1
            steps += script.steps.count
        }
        XCTAssertGreaterThan(tally["received", default: 0], 0, "no case received a datagram")
        print("UDPModelTests: \(cases) cases, \(steps) steps in \(Int(Date().timeIntervalSince(start))) s; checked: "
            + tally.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
    }

    @discardableResult
    private func runCase(_ script: UDPModelScript) throws -> UDPModelRunner {
        let runner = UDPModelRunner(script, loop: loop)
        do {
            try runner.run()
            return runner
        } catch let failure as UDPModelFailure {
            XCTFail("LOOPSOCKET_UDP_MODEL_SEED=\(script.seed) (\(script.setup)) \(failure)")
            throw failure
        } catch {
            XCTFail("LOOPSOCKET_UDP_MODEL_SEED=\(script.seed) (\(script.setup)) \(error)")
            throw error
        }
    }
}
