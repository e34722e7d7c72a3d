import Foundation
import XCTest
@testable import LoadTest

/// deploy/kubernetes/collect.sh driven by a stand-in `kubectl` on PATH that answers as a Kubernetes 1.27
/// cluster would (pods carry their completion index as an annotation only) and prints each pod's log as a
/// real one does: the pod's standard output and standard error interleaved line by line, on kubectl's
/// standard output, with kubectl's own notice on its standard error.
final class KubernetesCollectTests: XCTestCase {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let collect = repository.appendingPathComponent("deploy/kubernetes/collect.sh").path

    /// The stand-in: reads the Job's conditions, the pods and their logs from the files under $FAKE_K8S.
    static let fakeKubectl = #"""
        #!/bin/sh
        echo "$*" >> "$FAKE_K8S/calls"
        case "$1 $2" in
        "get job")
            cat "$FAKE_K8S/conditions" ;;
        "get pods")
            case "$*" in
            *job-completion-index=*) echo "No resources found in default namespace." >&2 ;;  # no such label before 1.28
            *'annotations.batch\.kubernetes\.io/job-completion-index'*'.status.phase'*) cat "$FAKE_K8S/pods" ;;
            *) echo "fake kubectl: a template it cannot answer: $*" >&2; exit 1 ;;
            esac ;;
        "logs "*)
            echo "Defaulted container \"loadtest\" out of: loadtest" >&2
            cat "$FAKE_K8S/logs/$2" ;;
        *)
            echo "fake kubectl: unexpected: $*" >&2; exit 1 ;;
        esac
        """#

    private var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("k8s-\(getpid())-\(name.hashValue & 0xffff)").path
        try? FileManager.default.removeItem(atPath: directory)
        for sub in ["bin", "logs"] {
            try FileManager.default.createDirectory(atPath: "\(directory)/\(sub)", withIntermediateDirectories: true)
        }
        try write(Self.fakeKubectl + "\n", "bin/kubectl")
        chmod("\(directory)/bin/kubectl", 0o755)
        try FileManager.default.createSymbolicLink(atPath: "\(directory)/bin/loadtest", withDestinationPath: ChildProcess.product("loadtest"))
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func write(_ text: String, _ path: String) throws {
        try text.write(toFile: "\(directory)/\(path)", atomically: false, encoding: .utf8)
    }

    /// Runs collect.sh in the directory with the stand-in first on PATH.
    private func collect(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
        let path = "\(directory)/bin:" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        return try ChildProcess.run("/bin/sh", ["-c", "d=$1; shift; cd \"$d\" && exec env PATH=\"$0\" FAKE_K8S=\"$d\" POLL=1 TIMEOUT=20 /bin/sh \"$@\"",
                                                path, directory, Self.collect] + arguments, seconds: 60)
    }

    /// A pod's log as kubectl returns it: standard error lines before the JSON, inside it and after it.
    private static func podLog(_ json: String) -> String {
        var lines = json.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.insert("loadtest: warning: a line on standard error, written while the JSON was", at: lines.count / 2)
        lines.insert("  warning: 100000 connections to one address need more local ports than the 28232 in net.ipv4.ip_local_port_range", at: 3)
        return "  open-file limit 1048576: room for 1048000 connections\n" + lines.joined(separator: "\n")
            + "\nloadtest: a last line on standard error\n"
    }

    func testCollectMergesThePodsJSONOutOfTheirMixedLogs() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        var result = try shortRun(.echo, port: server.port, connections: 2, duration: 0.3)
        var pods = ""
        var printed: [Int: String] = [:]
        for index in [1, 0] {  // the API lists pods in any order
            result.id = "pod-\(index)"
            let json = String(decoding: try result.jsonData(), as: UTF8.self)
            printed[index] = json
            try write(Self.podLog(json), "logs/loadtest-\(index)-x\(index)")
            pods += "\(index) loadtest-\(index)-x\(index) Succeeded\n"
        }
        try write(pods, "pods")
        try write("SuccessCriteriaMet Complete ", "conditions")

        let run = try collect(["loadtest", "2", "--json", "merged.json"])
        XCTAssertEqual(run.status, 0, "stdout: \(run.output)\nstderr: \(run.error)")
        XCTAssertTrue(run.output.contains("merged from 2 results"), run.output)
        let merged = try RunResult.decode(Data(contentsOf: URL(fileURLWithPath: "\(directory)/merged.json")))
        XCTAssertEqual(merged.sources, 2)
        XCTAssertEqual(merged.requests, result.requests * 2)
        for index in 0..<2 {
            let saved = try String(contentsOfFile: "\(directory)/loadtest-\(index).json", encoding: .utf8)
            XCTAssertEqual(saved, printed[index]! + "\n", "loadtest-\(index).json is that pod's JSON, every line of it and nothing else")
        }
        let calls = try String(contentsOfFile: "\(directory)/calls", encoding: .utf8)
        XCTAssertFalse(calls.contains("job-completion-index="), "no label selector that Kubernetes before 1.28 lacks: \(calls)")
    }

    /// A Job that failed (backoffLimit 0: one pod failed) is seen at once, not after the whole timeout, and
    /// the failed pod's log says why; nothing is merged.
    func testAFailedJobEndsTheWaitWithThePodsLog() throws {
        try write("FailureTarget Failed ", "conditions")
        try write("0 loadtest-0-a Succeeded\n1 loadtest-1-b Failed\n", "pods")
        try write("{\n  \"tool\" : \"loadtest\"\n}\n", "logs/loadtest-0-a")
        try write("loadtest: no connection to echo.default.svc.cluster.local:9000 could be made of 1,000 connections (refused 1,000)\n",
                  "logs/loadtest-1-b")
        let began = Date()
        let run = try collect(["loadtest", "2"])
        XCTAssertLessThan(Date().timeIntervalSince(began), 15, "did not wait out the timeout")
        XCTAssertNotEqual(run.status, 0)
        XCTAssertTrue(run.error.contains("pod loadtest-1-b (index 1) is Failed"), run.error)
        XCTAssertTrue(run.error.contains("could be made of 1,000 connections (refused 1,000)"), run.error)
        XCTAssertTrue(run.error.contains("nothing merged"), run.error)
    }

    /// loadtest itself, as the Job runs it (--json=- --quiet): standard output is the JSON alone, and
    /// standard error is empty, so even a plain `kubectl logs` would be JSON.
    func testJSONOnStandardOutputWithQuietPrintsNothingElse() throws {
        let server = try EchoServer()
        defer { XCTAssertNoThrow(try server.stop()) }
        let run = try ChildProcess.run(ChildProcess.product("loadtest"), [
            "echo", "--port", "\(server.port)", "-c", "2", "-l", "1", "-d", "0.3", "--warmup", "0.1", "--json=-", "--quiet",
        ])
        XCTAssertEqual(run.status, 0, run.error)
        XCTAssertEqual(run.error, "")
        XCTAssertNoThrow(try RunResult.decode(Data(run.output.utf8)), run.output)
        // Without --quiet the progress and the report go to standard error, never into the JSON.
        let loud = try ChildProcess.run(ChildProcess.product("loadtest"), [
            "echo", "--port", "\(server.port)", "-c", "2", "-l", "1", "-d", "0.3", "--warmup", "0.1", "--json=-",
        ])
        XCTAssertEqual(loud.status, 0, loud.error)
        XCTAssertNoThrow(try RunResult.decode(Data(loud.output.utf8)), loud.output)
        XCTAssertTrue(loud.error.contains("requests/s"), loud.error)
    }
}
