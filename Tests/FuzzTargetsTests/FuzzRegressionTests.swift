import FuzzTargets
import FoundationEssentials
import Glibc
import HTTPHello
import LoadTest
import LoopSocket
import Synchronization
import XCTest

/// Whether OpenSSL asked for a password through its user interface (the terminal, by default).
private let terminalAsked = Atomic(false)

/// One test per finding of the fuzzers: its saved input (Tests/Fuzz/Regressions/<target>/<name>) through its
/// target, and the behaviour it broke, asserted directly.
final class FuzzRegressionTests: XCTestCase {
    func replay(_ target: String, _ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let fuzzTarget = try XCTUnwrap(FuzzTarget.named(target), file: file, line: line)
        let path = "\(FuzzCorpusTests.fuzzDirectory)/Regressions/\(target)/\(name)"
        XCTAssertTrue(FileManager.default.fileExists(atPath: path), path, file: file, line: line)
        XCTAssertNil(FuzzReplay.replay(path, through: fuzzTarget), file: file, line: line)
    }

    /// A client that sends only line ends: http-hello skipped them as the empty lines allowed before a request
    /// line, and kept buffering them without bound; they count toward the head limit now.
    func testHTTPHeadEndlessEmptyLinesAreRefusedAtTheLimit() throws {
        try replay("http-head", "endless-empty-lines")
        let lineEnds = Array(String(repeating: "\r\n", count: 100).utf8)
        let outcome = lineEnds.withUnsafeBufferPointer { HTTPHeadParser.parse($0, maxLength: 32) }
        XCTAssertEqual(outcome, .failed(.headerTooLarge))
        let request = Array(("\r\n" + "GET / HTTP/1.1\r\nHost: a\r\n\r\n").utf8)
        let fits = request.withUnsafeBufferPointer { HTTPHeadParser.parse($0, maxLength: request.count) }
        guard case .complete(_, let length) = fits else { return XCTFail("\(fits)") }
        XCTAssertEqual(length, request.count)
        let over = request.withUnsafeBufferPointer { HTTPHeadParser.parse($0, maxLength: request.count - 1) }
        XCTAssertEqual(over, .failed(.headerTooLarge))
    }

    /// loadtest's WebSocket session, once it had sent its close, passed over each ping the server sent by
    /// calling itself again: a read holding tens of thousands of pings overflowed the stack. A loop now.
    func testWebSocketPingsAfterTheClientsCloseAreSkippedWithoutRecursion() throws {
        try replay("ws-handshake", "pings-after-close")
        var session = WebSocketSession(handshake: WebSocketHandshake(key: WebSocketHandshakeTarget.key), maxMessage: 4096)
        defer { session.deallocate() }
        let head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(WebSocketHandshake.accept(for: WebSocketHandshakeTarget.key))\r\n\r\n"
        guard case .opened = try next(&session, Array(head.utf8)).step else { return XCTFail("not opened") }
        _ = session.close(code: 1000)
        let server: [UInt8] = Array(repeating: [UInt8(0x89), 0], count: 100_000).flatMap { $0 } + [0x88, 2, 0x03, 0xE8]
        let (step, left) = try next(&session, server)
        XCTAssertEqual(left, 0)
        guard case .closed(let closed, _) = step else { return XCTFail("\(String(describing: step))") }
        XCTAssertEqual(closed, 1000)
    }

    /// The session's next step from `bytes`, and how many of them it left.
    func next(_ session: inout WebSocketSession, _ bytes: [UInt8]) throws -> (step: WebSocketSession.Step?, left: Int) {
        let result = bytes.withUnsafeBytes { raw -> Result<(WebSocketSession.Step?, Int), WebSocketError> in
            var input = raw
            do throws(WebSocketError) {
                let step = try session.next(&input)
                return .success((step, input.count))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// An encrypted PEM key and no password: OpenSSL's default, when it is given no password, is to ask for one
    /// on the controlling terminal (and wait), which a server started from a shell would do at startup. It is
    /// refused with an error now, the terminal never read.
    func testTLSEncryptedKeyWithoutPasswordIsRefusedWithoutAskingTheTerminal() throws {
        try replay("tls-pem", "encrypted-key-without-password")
        let input = try XCTUnwrap(FileManager.default.contents(
            atPath: "\(FuzzCorpusTests.fuzzDirectory)/Regressions/tls-pem/encrypted-key-without-password"))
        let chainLength = Int(input[1]) << 8 | Int(input[2])
        let chain = input.dropFirst(3).prefix(chainLength)
        let key = input.dropFirst(3 + chainLength)
        // OpenSSL asks through its default UI method: one that only records that it was asked stands in for
        // the terminal's (the UI functions from libcrypto, which the test links through LoopSocket).
        let ui = try OpenSSLUI()
        let recorder = try XCTUnwrap(ui.createMethod("recorder"))
        _ = ui.setReader(recorder) { _, _ in
            terminalAsked.store(true, ordering: .relaxed)
            return 0
        }
        let previous = ui.defaultMethod()
        ui.setDefaultMethod(recorder)
        defer {
            ui.setDefaultMethod(previous)
            ui.destroyMethod(recorder)
        }
        XCTAssertThrowsError(try TLSIdentity(certificateChainPEM: Data(chain), privateKeyPEM: Data(key))) { error in
            XCTAssertTrue("\(error)".contains("private key"), "\(error)")
        }
        XCTAssertFalse(terminalAsked.load(ordering: .relaxed), "OpenSSL asked for the password on the terminal")
        XCTAssertNoThrow(try TLSIdentity(certificateChainPEM: Data(chain), privateKeyPEM: Data(key), password: "secret"))
    }
}

/// The few functions of OpenSSL's UI (`openssl/ui.h`, which COpenSSL does not include), looked up in the
/// process.
private struct OpenSSLUI {
    typealias Reader = @convention(c) (OpaquePointer?, OpaquePointer?) -> CInt
    let createMethod: @convention(c) (UnsafePointer<CChar>) -> OpaquePointer?
    let setReader: @convention(c) (OpaquePointer?, Reader?) -> CInt
    let defaultMethod: @convention(c) () -> OpaquePointer?
    let setDefaultMethod: @convention(c) (OpaquePointer?) -> Void
    let destroyMethod: @convention(c) (OpaquePointer?) -> Void

    init() throws {
        func symbol<T>(_ name: String, as type: T.Type) throws -> T {
            unsafeBitCast(try XCTUnwrap(dlsym(UnsafeMutableRawPointer(bitPattern: 0), name), name), to: type)
        }
        createMethod = try symbol("UI_create_method", as: type(of: createMethod))
        setReader = try symbol("UI_method_set_reader", as: type(of: setReader))
        defaultMethod = try symbol("UI_get_default_method", as: type(of: defaultMethod))
        setDefaultMethod = try symbol("UI_set_default_method", as: type(of: setDefaultMethod))
        destroyMethod = try symbol("UI_destroy_method", as: type(of: destroyMethod))
    }
}
