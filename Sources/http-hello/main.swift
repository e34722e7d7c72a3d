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

    /// HTTP/1.0 without keep-alive, or `Connection: close`. Scans the bytes in place: no String and no array
    /// per request (the first version lowercased each request into a String and searched it through
    /// Foundation, 87% of the server's instructions; see docs/benchmarks.md).
    static func wantsClose(_ request: Data) -> Bool {
        request.withUnsafeBytes { raw -> Bool in
            let bytes = raw.bindMemory(to: UInt8.self)
            if let value = headerValueStart(bytes, named: Token.connection) {
                if startsCaseInsensitive(bytes, at: value, with: Token.close) { return true }
                if startsCaseInsensitive(bytes, at: value, with: Token.keepAlive) { return false }
            }
            return firstLineEnds(bytes, with: Token.http10)
        }
    }

    /// The byte strings the scan looks for, built once.
    enum Token {
        static let http10 = Array(" HTTP/1.0".utf8)
        static let connection = Array("connection".utf8)
        static let close = Array("close".utf8)
        static let keepAlive = Array("keep-alive".utf8)
    }

    /// Whether the request line (up to the first CR) ends with `suffix`.
    static func firstLineEnds(_ bytes: UnsafeBufferPointer<UInt8>, with suffix: [UInt8]) -> Bool {
        guard let cr = bytes.firstIndex(of: 0x0D), cr >= suffix.count else { return false }
        return bytes[(cr - suffix.count)..<cr].elementsEqual(suffix)
    }

    /// Whether `bytes[at...]` starts with `prefix` (lowercase), ignoring ASCII case.
    static func startsCaseInsensitive(_ bytes: UnsafeBufferPointer<UInt8>, at start: Int, with prefix: [UInt8]) -> Bool {
        guard bytes.count - start >= prefix.count else { return false }
        for k in 0..<prefix.count where bytes[start + k] | 0x20 != prefix[k] { return false }
        return true
    }

    /// Where the value of the first header `name` (lowercase) starts, after leading spaces; nil if absent.
    static func headerValueStart(_ bytes: UnsafeBufferPointer<UInt8>, named name: [UInt8]) -> Int? {
        var i = 0
        while let lf = bytes[i...].firstIndex(of: 0x0A) {
            let start = lf + 1
            guard start + name.count < bytes.count else { return nil }
            if bytes[start + name.count] == UInt8(ascii: ":") && startsCaseInsensitive(bytes, at: start, with: name) {
                var v = start + name.count + 1
                while v < bytes.count && bytes[v] == UInt8(ascii: " ") { v += 1 }
                return v
            }
            i = start
        }
        return nil
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
