import Foundation
import SharedTestSupport
import XCTest

@testable import EpollLoop
@testable import LoopSocket

/// Real peers on loopback: `openssl s_client`/`s_server`, curl and Python's `ssl` against our server and client,
/// with the committed test CA. Each peer runs as a child process (``PeerProcess``), killed in tearDown.
final class TLSInteropTests: TLSTestCase {
    static let caFile = TestCertificates.path("ca.pem")
    static let serverCert = TestCertificates.path("server.pem")
    static let serverKey = TestCertificates.path("server.key")

    // MARK: openssl s_client against our server

    /// `openssl s_client` to our port, verifying our chain against the test CA and asking for "localhost".
    /// `-brief` prints the connection summary on stderr, so stdout carries only the application data.
    private func launchSClient(port: UInt16, _ extra: [String] = []) throws -> PeerProcess {
        try launchPeer("openssl", [
            "s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", Self.caFile, "-servername", "localhost",
            "-verify_return_error", "-brief",
        ] + extra)
    }

    /// The end of a stream closed with close_notify: no error, or GCDAsyncSocket's closedError.
    private func assertCleanClose(_ error: (any Error)?, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(error == nil || error?.socketError?.code == .closedError, "a clean close, got \(String(describing: error))", file: file, line: line)
    }

    /// s_client with `extra` echoes a line through our echo server over `version`; closing its stdin then sends
    /// close_notify, which our side sees as a clean end of stream.
    private func checkSClientEcho(_ extra: [String], version: TLSVersion, file: StaticString = #filePath, line: UInt = #line) throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let client = try launchSClient(port: server.localPort, extra)
        let text = "echoed by LoopSocket over \(version.name)\n"
        try client.send(text)
        client.waitForOutput(text, file: file, line: line)
        let accepted = try XCTUnwrap(serverDelegate.waitForAccepts(file: file, line: line).first, file: file, line: line)
        XCTAssertEqual(accepted.tlsInfo?.version, version, file: file, line: line)
        XCTAssertEqual(accepted.tlsInfo?.serverName, "localhost", file: file, line: line)

        client.closeStdin()  // s_client: "DONE", close_notify, exit 0
        XCTAssertEqual(try client.waitForExit(), 0, client.transcript, file: file, line: line)
        XCTAssertEqual(client.stdout, text, file: file, line: line)
        XCTAssertTrue(client.stderr.contains("Protocol version: \(version.name)"), client.transcript, file: file, line: line)
        XCTAssertTrue(client.stderr.contains("Verification: OK"), client.transcript, file: file, line: line)
        let error = serverDelegate.waitForDisconnect(of: accepted, file: file, line: line)
        assertCleanClose(error, file: file, line: line)
    }

    func testOpenSSLClientOverTLS13() throws {
        try checkSClientEcho([], version: .v1_3)
    }

    func testOpenSSLClientOverTLS12() throws {
        try checkSClientEcho(["-tls1_2"], version: .v1_2)
    }

    /// TLS 1.0 and 1.1 are refused by us: the client's own security level is lowered to 0 so that it offers
    /// them for real (OpenSSL 3 would otherwise refuse before sending a ClientHello).
    func testOpenSSLClientOverTLS10And11IsRefused() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        for (index, flag) in ["-tls1", "-tls1_1"].enumerated() {
            let client = try launchSClient(port: server.localPort, [flag, "-cipher", "DEFAULT@SECLEVEL=0"])
            let status = try client.waitForExit()
            XCTAssertNotEqual(status, 0, "\(flag): \(client.transcript)")
            XCTAssertFalse(client.stderr.contains("CONNECTION ESTABLISHED"), "\(flag): \(client.transcript)")
            XCTAssertTrue(client.stderr.contains("alert protocol version"), "\(flag): \(client.transcript)")
            let accepted = serverDelegate.waitForAccepts(index + 1)[index]
            let error = serverDelegate.waitForDisconnect(of: accepted)
            let tlsError = try XCTUnwrap(error?.tlsError, "\(flag): \(String(describing: error))")
            XCTAssertEqual(tlsError.code, .handshakeFailed, "\(flag): \(tlsError)")
            XCTAssertTrue(tlsError.reason.contains("unsupported protocol"), "\(flag): \(tlsError)")
            XCTAssertEqual((tlsError as NSError).code, -9836, "\(flag): errSSLPeerProtocolVersion")  // errSSLPeerProtocolVersion
            XCTAssertFalse(serverDelegate.events(of: accepted).contains { if case .secured = $0 { return true } else { return false } })
        }
    }

    /// s_client killed after its handshake and an echo: its kernel sends a FIN with no close_notify before it,
    /// which our side reports as a possibly truncated stream, not as a clean close.
    func testOpenSSLClientKilledIsAStreamCutWithoutCloseNotify() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let client = try launchSClient(port: server.localPort)
        // The echo comes back after the session tickets, so s_client has read everything: its close is a FIN.
        try client.send("about to be cut\n")
        client.waitForOutput("about to be cut\n")
        let accepted = try XCTUnwrap(serverDelegate.waitForAccepts().first)
        client.kill()
        XCTAssertEqual(try client.waitForExit(), -SIGKILL)
        let error = serverDelegate.waitForDisconnect(of: accepted)
        XCTAssertEqual(error?.tlsError?.code, .closedWithoutNotify, "\(String(describing: error))")
        XCTAssertEqual((error as NSError?)?.code, -9816)  // errSSLClosedNoNotify
    }

    // MARK: our client against openssl s_server

    /// `openssl s_server` on 127.0.0.1 and a port of the kernel's choosing, for `connections` connections, in its
    /// interactive mode: it prints what it receives and sends what the test writes to its stdin.
    private func launchSServer(
        certificate: String = "server.pem", key: String = "server.key", connections: Int = 1, _ extra: [String] = []
    ) throws -> (PeerProcess, UInt16) {
        let server = try launchPeer("openssl", [
            "s_server", "-accept", "127.0.0.1:0", "-cert", TestCertificates.path(certificate), "-key", TestCertificates.path(key),
            "-naccept", "\(connections)",
        ] + extra)
        let port = try server.waitForLine(startingWith: "ACCEPT 127.0.0.1:")
        return (server, try XCTUnwrap(UInt16(port), server.transcript))
    }

    /// Our client queues a write before its handshake, s_server prints it, s_server's reply comes back; our
    /// disconnect sends close_notify, which s_server reports as "DONE" (an error otherwise).
    private func checkOurClientAgainstSServer(_ extra: [String], version: TLSVersion, file: StaticString = #filePath, line: UInt = #line) throws {
        let (sServer, port) = try launchSServer(extra)
        let delegate = makeDelegate("client")
        let client = try connectTLSClient(delegate, port: port, Self.client { $0.serverName = "localhost" })
        client.write(Data("1 queued before the handshake\n".utf8), withTimeout: testTimeout, tag: 1)
        waitForSecure(delegate, client, file: file, line: line)
        XCTAssertEqual(client.tlsInfo?.version, version, file: file, line: line)
        XCTAssertEqual(client.tlsInfo?.peerCertificates.first?.subject.contains("CN=localhost"), true, file: file, line: line)
        sServer.waitForOutput("1 queued before the handshake\n", file: file, line: line)
        let reply = "2 from s_server\n"
        try sServer.send(reply)
        client.readData(toLength: UInt(reply.utf8.count), withTimeout: testTimeout, tag: 2)
        XCTAssertEqual(delegate.waitForReadBytes(reply.utf8.count, tag: 2, file: file, line: line), Data(reply.utf8), file: file, line: line)
        client.disconnect()
        XCTAssertNil(delegate.waitForDisconnect(of: client, file: file, line: line), file: file, line: line)
        XCTAssertEqual(try sServer.waitForExit(), 0, sServer.transcript, file: file, line: line)
        XCTAssertTrue(sServer.stdout.contains("DONE"), "s_server saw no close_notify: \(sServer.transcript)", file: file, line: line)
    }

    func testOurClientAgainstOpenSSLServerOverTLS13() throws {
        try checkOurClientAgainstSServer([], version: .v1_3)
    }

    func testOurClientAgainstOpenSSLServerOverTLS12() throws {
        try checkOurClientAgainstSServer(["-tls1_2"], version: .v1_2)
    }

    /// s_server requires a client certificate (`-Verify 1 -verify_return_error`): ours, from client.pem and
    /// client.key, is accepted and s_server reads its subject; without one our client fails with a TLSError.
    func testOpenSSLServerRequiringOurClientCertificate() throws {
        let requireCertificate = ["-Verify", "1", "-verify_return_error", "-CAfile", Self.caFile]
        let identity = try Self.identity("client.pem", key: "client.key")
        let (sServer, port) = try launchSServer(requireCertificate)
        let delegate = makeDelegate("client")
        let client = try connectTLSClient(delegate, port: port, Self.client { $0.identity = identity; $0.serverName = "localhost" })
        waitForSecure(delegate, client)
        client.write(Data("with my certificate\n".utf8), withTimeout: testTimeout, tag: 1)
        sServer.waitForOutput("with my certificate\n")
        XCTAssertTrue(sServer.stdout.contains("test client"), "s_server did not print the client certificate: \(sServer.transcript)")
        try sServer.send("welcome\n")
        client.readData(toLength: 8, withTimeout: testTimeout, tag: 2)
        XCTAssertEqual(delegate.waitForReadBytes(8, tag: 2), Data("welcome\n".utf8))
        client.disconnect()
        delegate.waitForDisconnect(of: client)
        XCTAssertEqual(try sServer.waitForExit(), 0, sServer.transcript)

        let (refusing, refusingPort) = try launchSServer(requireCertificate)
        let otherDelegate = makeDelegate("client without a certificate")
        let other = try connectTLSClient(otherDelegate, port: refusingPort, Self.client { $0.serverName = "localhost" })
        // In TLS 1.3 the client finishes first and learns of the refusal from the alert it reads next.
        other.readData(withTimeout: testTimeout, tag: 0)
        let error = otherDelegate.waitForDisconnect(of: other)
        let tlsError = try XCTUnwrap(error?.tlsError, "\(String(describing: error))")
        XCTAssertTrue(tlsError.reason.contains("certificate required"), "\(tlsError)")
        _ = try refusing.waitForExit()  // s_server exits 0 after a failed handshake too: its stderr says why
        XCTAssertTrue(refusing.stderr.contains("peer did not return a certificate"), refusing.transcript)
    }

    /// s_server killed while our client reads: the FIN without close_notify is reported as such.
    func testOpenSSLServerKilledIsAStreamCutWithoutCloseNotify() throws {
        let (sServer, port) = try launchSServer()
        let delegate = makeDelegate("client")
        let client = try connectTLSClient(delegate, port: port, Self.client { $0.serverName = "localhost" })
        client.write(Data("hello\n".utf8), withTimeout: testTimeout, tag: 1)
        sServer.waitForOutput("hello\n")  // s_server has read everything we sent: its close is a FIN
        client.readData(withTimeout: -1, tag: 2)
        waitForSecure(delegate, client)
        sServer.kill()
        XCTAssertEqual(try sServer.waitForExit(), -SIGKILL)
        let error = delegate.waitForDisconnect(of: client)
        XCTAssertEqual(error?.tlsError?.code, .closedWithoutNotify, "\(String(describing: error))")
        XCTAssertFalse(delegate.events(of: client).contains { if case .read = $0 { return true } else { return false } })
    }

    // MARK: curl against an HTTPS responder on our server

    /// A tiny HTTPS responder: reads a request head over TLS, writes `body` with `Connection: close` and closes
    /// after writing. Records each request head and what its handshake negotiated.
    private func makeHTTPSResponder(
        _ delegate: RecordingDelegate, body: String, requests: Locked<[(String, TLSConnectionInfo?)]>
    ) throws -> GCDAsyncSocket {
        let response = Data("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8)
        let configuration = TLSConfiguration.server(identity: try Self.identity(), alpn: ["http/1.1"])
        delegate.configure { hooks in
            hooks.accept = { _, child in
                child.startTLS(configuration)
                child.readData(to: Data("\r\n\r\n".utf8), withTimeout: testTimeout, tag: 1)
            }
            hooks.read = { sock, head, _ in
                requests.withLock { $0.append((String(decoding: head, as: UTF8.self), sock.tlsInfo)) }
                sock.write(response, withTimeout: testTimeout, tag: 1)
                sock.disconnectAfterWriting()
            }
        }
        return try makeServer(delegate)
    }

    /// curl fetches https://localhost:PORT/hello (pinned to 127.0.0.1, no proxy, no ~/.curlrc) with `extra`.
    private func checkCurl(_ extra: [String], version: TLSVersion, file: StaticString = #filePath, line: UInt = #line) throws {
        let delegate = makeDelegate("https")
        let requests = Locked<[(String, TLSConnectionInfo?)]>([])
        let body = "hello over TLS from LoopSocket\n"
        let server = try makeHTTPSResponder(delegate, body: body, requests: requests)
        let port = server.localPort
        let curl = try launchPeer("curl", [
            "-q", "-sS", "--max-time", "10", "--noproxy", "*", "--cacert", Self.caFile,
            "--resolve", "localhost:\(port):127.0.0.1",
        ] + extra + ["https://localhost:\(port)/hello"])
        XCTAssertEqual(try curl.waitForExit(), 0, curl.transcript, file: file, line: line)
        XCTAssertEqual(curl.stdout, body, file: file, line: line)
        let accepted = try XCTUnwrap(delegate.waitForAccepts(file: file, line: line).first, file: file, line: line)
        XCTAssertNil(delegate.waitForDisconnect(of: accepted, file: file, line: line), file: file, line: line)
        let request = try XCTUnwrap(requests.value.first, file: file, line: line)
        XCTAssertTrue(request.0.hasPrefix("GET /hello HTTP/1.1\r\n"), request.0, file: file, line: line)
        XCTAssertTrue(request.0.contains("\r\nHost: localhost:\(port)\r\n"), request.0, file: file, line: line)
        XCTAssertEqual(request.1?.version, version, file: file, line: line)
        XCTAssertEqual(request.1?.alpn, "http/1.1", file: file, line: line)
        XCTAssertEqual(request.1?.serverName, "localhost", file: file, line: line)
    }

    func testCurlAgainstOurHTTPSResponder() throws {
        try checkCurl([], version: .v1_3)
    }

    func testCurlHTTP11OverTLS13Only() throws {
        try checkCurl(["--http1.1", "--tlsv1.3"], version: .v1_3)
    }

    func testCurlCappedAtTLS12() throws {
        try checkCurl(["--tls-max", "1.2"], version: .v1_2)
    }

    // MARK: Python's ssl module

    /// A Python TLS client: connects, sends `size` bytes, reads exactly as many back and compares, prints the
    /// version; then `unwrap` (close_notify sent, the peer's awaited) or `cut` (close without close_notify).
    static let pythonClient = #"""
    import os, socket, ssl, sys
    port, cafile, size, mode = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    context = ssl.create_default_context(cafile=cafile)
    if sys.argv[5] == "1.2":
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    tls = context.wrap_socket(raw, server_hostname="localhost", suppress_ragged_eofs=False)
    payload = bytes(((i % 251) * 37 + 11) % 256 for i in range(size))
    tls.sendall(payload)
    received = bytearray()
    while len(received) < size:
        chunk = tls.recv(min(65536, size - len(received)))
        if not chunk:
            sys.exit("end of stream after %d of %d bytes" % (len(received), size))
        received += chunk
    if bytes(received) != payload:
        sys.exit("the echo differs")
    print(tls.version(), flush=True)
    if mode == "unwrap":
        tls.unwrap().close()
    elif mode == "garbage":
        # An application-data record that cannot be decrypted, written beside the TLS layer.
        os.write(tls.fileno(), bytes([0x17, 0x03, 0x03, 0x00, 0x20]) + bytes(32))
        try:
            tls.recv(1)
            print("NO-ALERT", flush=True)
        except ssl.SSLError as error:
            print("ALERT", error.reason, flush=True)
        except (ConnectionError, OSError) as error:
            print("NO-ALERT", type(error).__name__, flush=True)
        tls.close()
    else:
        tls.close()
    print("OK", flush=True)
    """#

    /// A Python TLS server for one connection: prints its port, then the version, echoes `size` bytes; then
    /// `wait` reads on and prints how the client ended the stream (CLEAN for close_notify, RAGGED for a bare
    /// FIN), or `cut` closes without close_notify.
    static let pythonServer = #"""
    import socket, ssl, sys
    cert, key, size, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(10)
    print("PORT", listener.getsockname()[1], flush=True)
    conn, _ = listener.accept()
    listener.close()
    conn.settimeout(10)
    tls = context.wrap_socket(conn, server_side=True, suppress_ragged_eofs=False)
    print("VERSION", tls.version(), flush=True)
    received = bytearray()
    while len(received) < size:
        chunk = tls.recv(65536)
        if not chunk:
            sys.exit("end of stream after %d of %d bytes" % (len(received), size))
        received += chunk
    if mode == "half":
        # The client closed its side (close_notify) before reading: answer, then close ours.
        rest = tls.recv(1)
        print("CLEAN" if rest == b"" else "EXTRA", flush=True)
        tls.sendall(received)
        tls.unwrap().close()
        print("UNWRAPPED", flush=True)
        sys.exit(0)
    tls.sendall(received)
    if mode == "cut":
        tls.close()
        print("CUT", flush=True)
    else:
        try:
            rest = tls.recv(1)
            print("CLEAN" if rest == b"" else "EXTRA", flush=True)
        except ssl.SSLEOFError:
            print("RAGGED", flush=True)
        tls.close()
    """#

    /// The Python client against our echo server, echoing `size` bytes then closing by `mode` (over TLS 1.2 with
    /// `version` "1.2"); it must exit 0 having printed `version` and OK. Returns the server side's end.
    private func pythonClientAgainstOurEchoServer(
        size: Int, mode: String, version: String = "", file: StaticString = #filePath, line: UInt = #line
    ) throws -> (python: PeerProcess, error: (any Error)?) {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let python = try launchPeer("python3", ["-I", "-c", Self.pythonClient, "\(server.localPort)", Self.caFile, "\(size)", mode, version])
        XCTAssertEqual(try python.waitForExit(), 0, python.transcript, file: file, line: line)
        let accepted = try XCTUnwrap(serverDelegate.waitForAccepts(file: file, line: line).first, file: file, line: line)
        let error = serverDelegate.waitForDisconnect(of: accepted, file: file, line: line)
        XCTAssertEqual(serverDelegate.readBytes(of: accepted).count, size, file: file, line: line)
        return (python, error)
    }

    func testPythonClientEchoThenUnwrapIsACleanClose() throws {
        // unwrap returns only after our close_notify came back: exit 0 means both were sent.
        let (python, error) = try pythonClientAgainstOurEchoServer(size: 100_000, mode: "unwrap")
        XCTAssertEqual(python.stdout, "TLSv1.3\nOK\n", python.transcript)
        assertCleanClose(error)
    }

    func testPythonClientClosingWithoutCloseNotifyIsAStreamCut() throws {
        let (python, error) = try pythonClientAgainstOurEchoServer(size: 5000, mode: "cut")
        XCTAssertEqual(python.stdout, "TLSv1.3\nOK\n", python.transcript)
        XCTAssertEqual(error?.tlsError?.code, .closedWithoutNotify, "\(String(describing: error))")
    }

    /// Python's server for `size` bytes and `mode`, and our client connected to it with TLS queued.
    private func ourClientAgainstPythonServer(
        size: Int, mode: String
    ) throws -> (python: PeerProcess, port: UInt16, client: GCDAsyncSocket, delegate: RecordingDelegate) {
        let python = try launchPeer("python3", ["-I", "-c", Self.pythonServer, Self.serverCert, Self.serverKey, "\(size)", mode])
        let port = try XCTUnwrap(UInt16(try python.waitForLine(startingWith: "PORT ")), python.transcript)
        let delegate = makeDelegate("client")
        let client = try connectTLSClient(delegate, port: port, Self.client { $0.serverName = "localhost" })
        return (python, port, client, delegate)
    }

    /// Our client against Python's TLS server: 200,000 bytes (13 records) each way, then our close_notify.
    func testOurClientAgainstPythonServer() throws {
        let size = 200_000
        let (python, port, client, delegate) = try ourClientAgainstPythonServer(size: size, mode: "wait")
        let payload = patternData(size)
        client.write(payload, withTimeout: testTimeout, tag: 1)
        client.readData(toLength: UInt(size), withTimeout: testTimeout, tag: 2)
        XCTAssertEqual(delegate.waitForReadBytes(size, tag: 2), payload)
        XCTAssertEqual(client.tlsInfo?.version, .v1_3)
        client.disconnect()
        XCTAssertNil(delegate.waitForDisconnect(of: client))
        XCTAssertEqual(try python.waitForExit(), 0, python.transcript)
        XCTAssertEqual(python.stdout, "PORT \(port)\nVERSION TLSv1.3\nCLEAN\n", python.transcript)
    }

    func testPythonServerClosingWithoutCloseNotifyIsAStreamCut() throws {
        let (python, _, client, delegate) = try ourClientAgainstPythonServer(size: 3, mode: "cut")
        client.write(Data("abc".utf8), withTimeout: testTimeout, tag: 1)
        client.readData(toLength: 3, withTimeout: testTimeout, tag: 2)
        XCTAssertEqual(delegate.waitForReadBytes(3, tag: 2), Data("abc".utf8))
        client.readData(withTimeout: -1, tag: 3)
        let error = delegate.waitForDisconnect(of: client)
        XCTAssertEqual(error?.tlsError?.code, .closedWithoutNotify, "\(String(describing: error))")
        XCTAssertEqual(try python.waitForExit(), 0, python.transcript)
        XCTAssertTrue(python.stdout.hasSuffix("CUT\n"), python.transcript)
    }

    // MARK: More of TLS's life with real peers

    /// s_client's `K` sends a KeyUpdate asking us to update our keys too, `k` one that does not; the echo goes
    /// on across both. (s_client drops whatever else it read along with a command line, so each line is sent
    /// once it has printed KEYUPDATE.)
    func testOpenSSLClientKeyUpdateMidStream() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let client = try launchSClient(port: server.localPort)
        try client.send("1 before\n")
        client.waitForOutput("1 before\n")
        try client.send("K\n")
        client.waitForOutput("KEYUPDATE", onStderr: true)
        try client.send("2 after one key update\n")
        client.waitForOutput("2 after one key update\n")
        try client.send("k\n")
        client.waitForOutput("KEYUPDATE", times: 2, onStderr: true)
        try client.send("3 after another\n")
        client.waitForOutput("3 after another\n")
        client.closeStdin()
        XCTAssertEqual(try client.waitForExit(), 0, client.transcript)
        XCTAssertEqual(client.stdout, "1 before\n2 after one key update\n3 after another\n", client.transcript)
        XCTAssertTrue(client.stderr.contains("KEYUPDATE"), client.transcript)
        let accepted = try XCTUnwrap(serverDelegate.waitForAccepts().first)
        let error = serverDelegate.waitForDisconnect(of: accepted)
        assertCleanClose(error)
    }

    /// s_client's `R` over TLS 1.2 asks for a renegotiation, which we do not do: the connection ends with an
    /// error on both sides, and nothing hangs.
    func testOpenSSLClientRenegotiationIsRefused() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let client = try launchSClient(port: server.localPort, ["-tls1_2"])
        try client.send("before\n")
        client.waitForOutput("before\n")
        try client.send("R\n")
        // We answer with a no_renegotiation warning; OpenSSL's client makes that fatal (handshake_failure).
        let accepted = try XCTUnwrap(serverDelegate.waitForAccepts().first)
        let error = serverDelegate.waitForDisconnect(of: accepted)?.tlsError
        XCTAssertEqual(error?.code, .protocolError, "\(String(describing: error))")
        XCTAssertTrue(error?.reason.contains("handshake failure") == true, "\(String(describing: error))")
        XCTAssertNotEqual(try client.waitForExit(), 0, client.transcript)
        XCTAssertTrue(client.stderr.contains("no renegotiation"), client.transcript)
        XCTAssertEqual(client.stdout, "before\n")
    }

    /// A record that cannot be decrypted after the handshake: a protocol error on our side, and the peer is
    /// told with a bad_record_mac alert (RFC 8446 5.2: the receiver MUST), as `openssl s_server` tells it.
    func testGarbageRecordAfterTheHandshakeIsAProtocolErrorWithAnAlert() throws {
        let (python, anyError) = try pythonClientAgainstOurEchoServer(size: 10, mode: "garbage")
        let error = anyError?.tlsError
        XCTAssertEqual(error?.code, .protocolError, "\(String(describing: anyError))")
        XCTAssertTrue(error?.reason.contains("bad record mac") == true, "\(String(describing: anyError))")
        XCTAssertTrue(python.stdout.contains("ALERT SSLV3_ALERT_BAD_RECORD_MAC"), python.transcript)
    }

    /// Our client refusing s_server's certificate (an unknown CA) tells s_server so with an alert.
    func testOurClientRefusingOpenSSLServerCertificateSendsAnAlert() throws {
        let (sServer, port) = try launchSServer(certificate: "untrusted.pem", key: "untrusted.key")
        let delegate = makeDelegate("client")
        let client = try connectTLSClient(delegate, port: port, Self.client { $0.serverName = "localhost" })
        let error = delegate.waitForDisconnect(of: client)?.tlsError
        XCTAssertEqual(error?.code, .certificateVerificationFailed, "\(String(describing: error))")
        XCTAssertEqual(error.map { $0 as NSError }?.code, -9812)  // errSSLUnknownRootCert
        _ = try sServer.waitForExit()
        XCTAssertTrue(sServer.stderr.contains("alert unknown ca"), sServer.transcript)
    }

    func testPythonClientOverTLS12ThenUnwrap() throws {
        let (python, error) = try pythonClientAgainstOurEchoServer(size: 40000, mode: "unwrap", version: "1.2")
        XCTAssertEqual(python.stdout, "TLSv1.2\nOK\n", python.transcript)
        assertCleanClose(error)
    }

    /// closeWriteStream: our close_notify, then our write side shut; Python sees a clean end, answers, and
    /// closes its side with close_notify, which our client reads as a clean end after the answer.
    func testCloseWriteStreamIsAHalfCloseThePeerCanAnswer() throws {
        let size = 50_000
        let (python, port, client, delegate) = try ourClientAgainstPythonServer(size: size, mode: "half")
        let payload = patternData(size)
        client.write(payload, withTimeout: testTimeout, tag: 1)
        client.closeWriteStream()
        client.readData(toLength: UInt(size), withTimeout: testTimeout, tag: 2)
        XCTAssertEqual(delegate.waitForReadBytes(size, tag: 2), payload)
        let error = delegate.waitForDisconnect(of: client)
        assertCleanClose(error)
        XCTAssertEqual(try python.waitForExit(), 0, python.transcript)
        XCTAssertEqual(python.stdout, "PORT \(port)\nVERSION TLSv1.3\nCLEAN\nUNWRAPPED\n", python.transcript)
    }

    /// s_client saves its session (-sess_out) and offers it again (-sess_in): our server resumes it.
    func testOpenSSLClientResumesItsSessionWithOurServer() throws {
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: try Self.identity()))
        let sessionFile = try makeTempDirectory().file("session.pem")
        for (round, flags) in [["-sess_out", sessionFile], ["-sess_in", sessionFile]].enumerated() {
            let client = try launchSClient(port: server.localPort, flags)
            try client.send("round \(round)\n")  // the echo comes after the session tickets
            client.waitForOutput("round \(round)\n")
            let accepted = serverDelegate.waitForAccepts(round + 1)[round]
            XCTAssertEqual(accepted.tlsInfo?.sessionResumed, round == 1, "round \(round)")
            client.closeStdin()
            XCTAssertEqual(try client.waitForExit(), 0, client.transcript)
        }
    }

    /// Our client keeps the session s_server gives it and resumes it on its next connection.
    func testOurClientResumesItsSessionWithOpenSSLServer() throws {
        let (sServer, port) = try launchSServer(connections: 2)
        let configuration = Self.client {
            $0.serverName = "localhost"
            $0.sessionResumption = true
        }
        for round in 0..<2 {
            let delegate = makeDelegate("client \(round)")
            let client = try connectTLSClient(delegate, port: port, configuration)
            waitForSecure(delegate, client)
            // The TLS 1.3 ticket arrives after the handshake: a round trip takes it in.
            client.write(Data("\(round) ping\n".utf8), withTimeout: testTimeout, tag: 1)
            sServer.waitForOutput("\(round) ping\n")
            try sServer.send("\(round) pong\n")
            client.readData(toLength: 7, withTimeout: testTimeout, tag: 2)
            XCTAssertEqual(delegate.waitForReadBytes(7, tag: 2), Data("\(round) pong\n".utf8))
            XCTAssertEqual(client.tlsInfo?.sessionResumed, round == 1, "round \(round)")
            client.disconnect()
            delegate.waitForDisconnect(of: client)
        }
        XCTAssertEqual(try sServer.waitForExit(), 0, sServer.transcript)
    }

    /// Our server requires a client certificate: s_client's (client.pem) is verified against the test CA and
    /// readable; s_client without one is refused with a clear reason.
    func testOurServerRequiringOpenSSLClientCertificate() throws {
        var serverTLS = TLSConfiguration.server(identity: try Self.identity())
        serverTLS.clientAuthentication = .required
        serverTLS.trustRoots = .certificates(Self.testCA)
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, serverTLS)
        let client = try launchSClient(port: server.localPort, ["-cert", TestCertificates.path("client.pem"), "-key", TestCertificates.path("client.key")])
        try client.send("with a certificate\n")
        client.waitForOutput("with a certificate\n")
        let accepted = try XCTUnwrap(serverDelegate.waitForAccepts().first)
        XCTAssertEqual(accepted.tlsInfo?.peerCertificates.first?.subject.contains("CN=test client"), true)
        client.closeStdin()
        XCTAssertEqual(try client.waitForExit(), 0, client.transcript)

        let refused = try launchSClient(port: server.localPort)
        let second = serverDelegate.waitForAccepts(2)[1]
        let error = serverDelegate.waitForDisconnect(of: second)
        XCTAssertEqual(error?.tlsError?.code, .handshakeFailed, "\(String(describing: error))")
        XCTAssertTrue(error?.tlsError?.reason.contains("peer did not return a certificate") == true, "\(String(describing: error))")
        refused.closeStdin()
        _ = try refused.waitForExit()
        XCTAssertTrue(refused.stderr.contains("certificate required"), refused.transcript)
    }

    /// `openssl s_client -starttls smtp` against a small SMTP greeting on our server: plaintext lines first,
    /// then startTLS on the same connection, then the echo over TLS.
    func testOpenSSLClientStartTLSInAnSMTPDialogue() throws {
        let serverDelegate = makeDelegate("smtp")
        let serverTLS = TLSConfiguration.server(identity: try Self.identity())
        let line = Data("\r\n".utf8)
        serverDelegate.configure { hooks in
            hooks.accept = { _, child in
                child.write(Data("220 loopsocket ESMTP\r\n".utf8), withTimeout: testTimeout, tag: 0)
                child.readData(to: line, withTimeout: testTimeout, tag: 1)  // EHLO
            }
            hooks.read = { sock, data, tag in
                switch tag {
                case 1:
                    sock.write(Data("250-loopsocket\r\n250 STARTTLS\r\n".utf8), withTimeout: testTimeout, tag: 0)
                    sock.readData(to: line, withTimeout: testTimeout, tag: 2)  // STARTTLS
                case 2:
                    sock.write(Data("220 go ahead\r\n".utf8), withTimeout: testTimeout, tag: 0)
                    sock.startTLS(serverTLS)
                    sock.readData(withTimeout: -1, tag: 3)
                default:
                    sock.write(data, withTimeout: -1, tag: 3)
                    sock.readData(withTimeout: -1, tag: 3)
                }
            }
        }
        let server = try makeServer(serverDelegate)
        let client = try launchSClient(port: server.localPort, ["-starttls", "smtp"])
        try client.send("over TLS after STARTTLS\n")
        client.waitForOutput("over TLS after STARTTLS\n")
        let accepted = try XCTUnwrap(serverDelegate.waitForAccepts().first)
        XCTAssertEqual(accepted.tlsInfo?.version, .v1_3)
        XCTAssertTrue(serverDelegate.readBytes(tag: 1).starts(with: Data("EHLO ".utf8)), "\(serverDelegate.events)")
        XCTAssertEqual(serverDelegate.readBytes(tag: 2), Data("STARTTLS\r\n".utf8))
        client.closeStdin()
        XCTAssertEqual(try client.waitForExit(), 0, client.transcript)
    }

    /// A Python client that sends "STARTTLS\r\n" and its ClientHello in one segment (ssl.MemoryBIO), so our
    /// server's plaintext read takes the line and the handshake starts from the bytes behind it.
    static let pythonStartTLSClient = #"""
    import socket, ssl, sys
    port, cafile = int(sys.argv[1]), sys.argv[2]
    context = ssl.create_default_context(cafile=cafile)
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")

    def pump(step):
        while True:
            try:
                result = step()
                pending = outgoing.read()
                if pending:
                    sock.sendall(pending)
                return result
            except ssl.SSLWantReadError:
                pending = outgoing.read()
                if pending:
                    sock.sendall(pending)
                chunk = sock.recv(65536)
                if not chunk:
                    sys.exit("end of stream")
                incoming.write(chunk)

    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    sock.sendall(b"STARTTLS\r\n" + outgoing.read())
    pump(tls.do_handshake)
    tls.write(b"hello after STARTTLS")
    sock.sendall(outgoing.read())
    received = b""
    while len(received) < 20:
        received += pump(lambda: tls.read(100))
    print(tls.version(), received.decode(), flush=True)
    sock.close()
    """#

    func testStartTLSWithTheClientHelloInTheSegmentOfThePlaintextLine() throws {
        let serverDelegate = makeDelegate("server")
        let serverTLS = TLSConfiguration.server(identity: try Self.identity())
        serverDelegate.configure { hooks in
            hooks.accept = { _, child in child.readData(to: Data("\r\n".utf8), withTimeout: testTimeout, tag: 1) }
            hooks.read = { sock, data, tag in
                if tag == 1 {
                    sock.startTLS(serverTLS)
                } else {
                    sock.write(data, withTimeout: testTimeout, tag: 2)
                }
                sock.readData(withTimeout: testTimeout, tag: 2)
            }
        }
        let server = try makeServer(serverDelegate)
        let python = try launchPeer("python3", ["-I", "-c", Self.pythonStartTLSClient, "\(server.localPort)", Self.caFile])
        XCTAssertEqual(try python.waitForExit(), 0, python.transcript)
        XCTAssertEqual(python.stdout, "TLSv1.3 hello after STARTTLS\n", python.transcript)
        XCTAssertEqual(serverDelegate.readBytes(tag: 1), Data("STARTTLS\r\n".utf8))
    }

    /// A 1 MiB response body, then disconnectAfterWriting: curl gets every byte, then our close_notify.
    func testCurlDownloadsAOneMiBBodyWrittenBeforeDisconnectAfterWriting() throws {
        let delegate = makeDelegate("https")
        let requests = Locked<[(String, TLSConnectionInfo?)]>([])
        let body = String(repeating: "0123456789abcdef", count: 1 << 16)  // 1 MiB
        let server = try makeHTTPSResponder(delegate, body: body, requests: requests)
        let port = server.localPort
        let curl = try launchPeer("curl", [
            "-q", "-sS", "--max-time", "10", "--noproxy", "*", "--cacert", Self.caFile,
            "--resolve", "localhost:\(port):127.0.0.1", "https://localhost:\(port)/big",
        ])
        XCTAssertEqual(try curl.waitForExit(), 0, curl.stderr)
        XCTAssertEqual(curl.stdoutBytes.count, body.utf8.count)
        XCTAssertTrue(curl.stdoutBytes == Data(body.utf8))
    }
}
