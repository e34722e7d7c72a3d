import Foundation
import Glibc
@testable import LoadTest
import XCTest

/// `loadtest tcp` and the LoadProtocol API against servers no one here wrote: redis-server (RESP2), memcached
/// (its text protocol) and mosquitto (MQTT 3.1.1, through the mqtt-load example), every reply's contents
/// checked.
final class RealServerTests: XCTestCase {
    /// 1 KiB of value, the same bytes in the request that stores it and the reply that returns it.
    private static let value = String((0..<1024).map { Character(Unicode.Scalar(UInt8(97 + $0 % 26))) })

    private func redis() throws -> RealServer {
        try RealServer("redis-server", ready: "Ready to accept connections") { port in
            ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        }
    }

    private func tcpRun(_ port: UInt16, connections: Int = 4, _ adjust: (inout LoadConfig) -> Void) throws -> RunResult {
        try shortRun(.tcp, port: port, connections: connections, duration: 0.5, adjust)
    }

    func testRedisPingSetAndGetOf1KiBWithEveryReplyChecked() throws {
        let server = try redis()
        defer { server.stop() }
        let result = try tcpRun(server.port) { config in
            config.pipeline = 2
            config.tcp.requests = [Array("PING\r\n".utf8), Array("SET key \(Self.value)\r\n".utf8),
                                   Array("GET key\r\n".utf8)]
            config.tcp.formats = [.resp]
            config.checks.bodies = [Array("+PONG\r\n".utf8), Array("+OK\r\n".utf8),
                                    Array("$1024\r\n\(Self.value)\r\n".utf8)]
        }
        XCTAssertGreaterThan(result.requests, 100)
        XCTAssertEqual(result.errors.total, 0, "\(result.errors)")
        // A GET reply is 1,033 bytes, the other two 7 and 5: the bytes say the framing took whole replies.
        XCTAssertEqual(Double(result.bytes) / Double(result.requests), (7 + 5 + 1033) / 3, accuracy: 20)

        // The checks can fail: the reply to GET is not what SET stored.
        let wrong = try tcpRun(server.port) { config in
            config.tcp.requests = [Array("GET key\r\n".utf8)]
            config.tcp.formats = [.resp]
            config.checks.bodies = [Array("$1024\r\nb".utf8)]
        }
        XCTAssertGreaterThan(wrong.errors.byKind["check"] ?? 0, 0)
        XCTAssertEqual(wrong.errors.byKind["check"], wrong.errors.total)
    }

    func testRedisNestedArraysErrorRepliesAndTheReplyBound() throws {
        let server = try redis()
        defer { server.stop() }
        // COMMAND INFO answers with arrays nested three deep; an unknown command with a RESP error.
        let nested = try tcpRun(server.port) { config in
            config.tcp.requests = [Array("COMMAND INFO get\r\n".utf8), Array("NOSUCHCOMMAND\r\n".utf8)]
            config.tcp.formats = [.resp]
        }
        XCTAssertGreaterThan(nested.requests, 10)
        // Errors count over the whole run, requests over the window: at least half as many errors.
        XCTAssertGreaterThanOrEqual(nested.errors.byKind["error_reply"] ?? 0, nested.requests / 2, "every second reply is -ERR")
        XCTAssertEqual(nested.errors.byKind["error_reply"], nested.errors.total, "\(nested.errors)")
        XCTAssertTrue(nested.errors.first?.contains("unknown command") ?? false, "\(nested.errors)")

        // A reply bigger than --reply-max is an error that closes the connection; nothing buffers past it.
        let bounded = try tcpRun(server.port, connections: 1) { config in
            config.tcp.requests = [Array("SET key \(Self.value)\r\n".utf8), Array("GET key\r\n".utf8)]
            config.tcp.formats = [.resp]
            config.tcp.replyMax = 512
        }
        XCTAssertEqual(bounded.errors.byKind["reply_too_large"], 1, "\(bounded.errors)")
        XCTAssertEqual(bounded.connectionsOpen, 0)
    }

    func testMemcachedSetAndGetFramedByTheirTerminators() throws {
        let user = getuid() == 0 ? ["-u", "root"] : []  // memcached refuses to run as root without -u
        let server = try RealServer("memcached", ready: "server listening") { port in
            user + ["-l", "127.0.0.1", "-p", "\(port)", "-U", "0", "-vv"]
        }
        defer { server.stop() }
        let result = try tcpRun(server.port) { config in
            config.pipeline = 4
            config.tcp.requests = [Array("set key 0 0 1024\r\n\(Self.value)\r\n".utf8), Array("get key\r\n".utf8)]
            config.tcp.formats = [.until(Array("STORED\r\n".utf8)), .until(Array("END\r\n".utf8))]
            config.checks.bodies = [Array("STORED\r\n".utf8), Array("VALUE key 0 1024\r\n\(Self.value)\r\nEND\r\n".utf8)]
        }
        XCTAssertGreaterThan(result.requests, 100)
        XCTAssertEqual(result.errors.total, 0, "\(result.errors)")
    }

    func testMQTTExampleAgainstMosquitto() throws {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("mosquitto-\(getpid()).conf")
        defer { try? FileManager.default.removeItem(at: config) }
        let server = try RealServer("mosquitto", ready: "running") { port in
            // Its log goes to standard error (unbuffered; to standard output it is buffered and arrives late).
            try? "listener \(port) 127.0.0.1\nallow_anonymous true\n"
                .write(to: config, atomically: true, encoding: .utf8)
            return ["-c", config.path]
        }
        defer { server.stop() }
        let run = try ChildProcess.run(ChildProcess.product("mqtt-load"), [
            "--payload", "100", "--port", "\(server.port)", "--connections", "4", "--pipeline", "2",
            "--duration", "0.5", "--warmup", "0.1", "--loops", "1", "--quiet", "--json", "-",
        ])
        XCTAssertEqual(run.status, 0, run.error)
        let result = try RunResult.decode(Data(run.output.utf8))
        XCTAssertEqual(result.mode, "mqtt")
        XCTAssertEqual(result.connectionsEstablished, 4, "every CONNECT got a CONNACK")
        XCTAssertGreaterThan(result.requests, 50)
        XCTAssertEqual(result.bytes, result.requests * 4, "one 4-byte PUBACK per PUBLISH")
        XCTAssertEqual(result.errors.total, 0, "\(result.errors)")
    }
}
