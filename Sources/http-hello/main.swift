// http-hello: a keep-alive HTTP/1.1 responder built the GCDAsyncSocket way: read to "\r\n\r\n" (at most
// 8 KiB), answer 200 with body "hello", read the next request.
//
//     http-hello --port 8080 [--host 127.0.0.1] [--loops N]
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc
import ExampleSupport
import LoopSocket

let headerEnd = Data("\r\n\r\n".utf8)
let response = Data("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello".utf8)
let closeResponse = Data("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nhello".utf8)
let badRequest = Data("HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
let maxHeaderBytes: UInt = 8192

/// Answers every request on a connection; requests without a body (GET, HEAD) are what it is for.
final class HelloDelegate: GCDAsyncSocketDelegate {
    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {
        newSocket.readData(to: headerEnd, withTimeout: 60, maxLength: maxHeaderBytes, tag: 0)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        if Self.wantsClose(data) {
            sock.write(closeResponse, withTimeout: 10, tag: 0)
            sock.disconnectAfterWriting()
        } else {
            sock.write(response, withTimeout: 10, tag: 0)
            sock.readData(to: headerEnd, withTimeout: 60, maxLength: maxHeaderBytes, tag: 0)
        }
    }

    /// HTTP/1.0 without keep-alive, or `Connection: close`.
    static func wantsClose(_ request: Data) -> Bool {
        request.withUnsafeBytes { raw in
            let text = String(decoding: raw, as: UTF8.self).lowercased()
            if text.contains("connection: close") { return true }
            return text.contains(" http/1.0\r\n") && !text.contains("connection: keep-alive")
        }
    }
}

let arguments = ServerArguments.parse(name: "http-hello")
let group: EventLoopGroup
do {
    group = try EventLoopGroup(numberOfLoops: arguments.loops, name: "http")
} catch {
    ServerArguments.fail("cannot start event loops: \(error)")
}
let delegate = HelloDelegate()
let listener = GCDAsyncSocket(delegate: delegate, delegateQueue: nil, loop: group.loops[0], group: group)
do {
    try listener.accept(onInterface: arguments.host, port: arguments.port)
} catch {
    ServerArguments.fail("cannot listen on \(arguments.host ?? "*"):\(arguments.port): \(error)")
}
ServerArguments.announce("http-hello listening on \(arguments.host ?? "*") port \(listener.localPort) with \(group.loops.count) loop(s)")
ServerArguments.waitForTermination()
listener.disconnect()
try? group.shutdownGracefully()
