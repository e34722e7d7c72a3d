import Foundation
import LoopSocket
import XCTest

/// GCDAsyncSocket's behaviour pinned by random scripts checked against a reference model: reads of every
/// kind and buffer variant, writes from nothing to a few hundred KiB, startTLS on both sides, timeouts whose
/// outcome is determined, the disconnectAfter… family, half-closes from either side, over TCP and Unix
/// sockets, with a raw or a GCDAsyncSocket peer whose bytes arrive in random splits.
///
/// Each case runs from its own seed; a failure prints `LOOPSOCKET_MODEL_SEED=<seed>`, which reruns exactly
/// that case. By default cases run for ``defaultSeconds`` (the same budget under ThreadSanitizer, which then
/// simply runs fewer); `LOOPSOCKET_MODEL_SECONDS=3600` runs them for an hour.
final class SocketModelTests: SocketTestCase {
    override class var loopCount: Int { 2 }

    /// Seconds of cases in a default `swift test` run.
    static let defaultSeconds: TimeInterval = 15

    func testRandomScriptsAgainstTheReferenceModel() throws {
        let environment = ProcessInfo.processInfo.environment
        let serverTLS = TLSConfiguration.server(identity: try TLSTestCase.identity())
        let clientTLS = TLSTestCase.client()
        if let text = environment["LOOPSOCKET_MODEL_SEED"] {
            let seed = try XCTUnwrap(Self.parseSeed(text), "LOOPSOCKET_MODEL_SEED=\(text) is not a 64-bit number")
            let script = ModelScript(seed: seed)
            print("SocketModelTests: case \(seed): \(script.setup)\n  " + script.steps.map(\.description).joined(separator: "\n  "))
            try runCase(script, serverTLS: serverTLS, clientTLS: clientTLS)
            return
        }
        let seconds = environment["LOOPSOCKET_MODEL_SECONDS"].flatMap(TimeInterval.init) ?? Self.defaultSeconds
        let base = UInt64.random(in: .min ... .max)
        print("SocketModelTests: base seed \(base), \(seconds) s of cases")
        let start = Date()
        var cases = 0, steps = 0
        var tally: [String: Int] = [:]
        while Date().timeIntervalSince(start) < seconds {
            let script = ModelScript(seed: SeededGenerator.caseSeed(base: base, index: cases))
            let runner = try runCase(script, serverTLS: serverTLS, clientTLS: clientTLS)
            tally.merge(runner.tally, uniquingKeysWith: +)
            cases += 1
            steps += script.steps.count
        }
        print("SocketModelTests: \(cases) cases, \(steps) steps in \(Int(Date().timeIntervalSince(start))) s; callbacks checked: "
            + tally.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
    }

    @discardableResult
    private func runCase(_ script: ModelScript, serverTLS: TLSConfiguration, clientTLS: TLSConfiguration) throws -> ModelRunner {
        let runner = ModelRunner(script, test: self, serverTLS: serverTLS, clientTLS: clientTLS)
        do {
            try runner.run()
            return runner
        } catch let failure as ModelFailure {
            XCTFail("LOOPSOCKET_MODEL_SEED=\(script.seed) (\(script.setup)) \(failure)")
            throw failure
        }
    }

    /// A seed in decimal or `0x` hexadecimal.
    static func parseSeed(_ text: String) -> UInt64? {
        text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
    }
}
