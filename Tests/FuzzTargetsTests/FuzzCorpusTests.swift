import FuzzTargets
import XCTest

/// Every input in the seed corpus (Tests/Fuzz/Corpus/<target>) and every regression input
/// (Tests/Fuzz/Regressions/<target>) through its target, without the fuzzer: what was found once stays found.
final class FuzzCorpusTests: XCTestCase {
    /// Tests/Fuzz, from this file's path.
    static let fuzzDirectory: String = {
        var path = #filePath
        for _ in 0..<2 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path + "/Fuzz"
    }()

    /// The files under `kind` (Corpus or Regressions) for `target`.
    static func inputs(_ kind: String, _ target: FuzzTarget) -> [String] {
        let directory = "\(fuzzDirectory)/\(kind)/\(target.name)"
        guard FileManager.default.fileExists(atPath: directory) else { return [] }
        return FuzzReplay.files(in: [directory])
    }

    func testEveryTargetHasASeedCorpus() {
        for target in FuzzTarget.all {
            XCTAssertGreaterThanOrEqual(Self.inputs("Corpus", target).count, 3, "seeds for \(target.name)")
        }
    }

    func testSeedCorpusPasses() {
        for target in FuzzTarget.all {
            for file in Self.inputs("Corpus", target) {
                XCTAssertNil(FuzzReplay.replay(file, through: target), file)
            }
        }
    }

    func testRegressionInputsPass() {
        for target in FuzzTarget.all {
            for file in Self.inputs("Regressions", target) {
                XCTAssertNil(FuzzReplay.replay(file, through: target), file)
            }
        }
    }

    /// A property that fails is reported, not swallowed: the checks can fail.
    func testAFailingPropertyIsReported() throws {
        let target = try XCTUnwrap(FuzzTarget.named("utf8"))
        XCTAssertNil(FuzzReplay.replay(Array("héllo".utf8), through: target))
        let broken = FuzzTarget(name: "broken", summary: "", maxLength: 1) { bytes throws(PropertyFailure) in
            if bytes.count > 1 { throw PropertyFailure("too long") }
        }
        XCTAssertEqual(FuzzReplay.replay([1, 2], through: broken), "too long")
    }
}
