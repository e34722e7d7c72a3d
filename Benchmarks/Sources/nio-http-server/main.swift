// nio-http-server: a keep-alive HTTP/1.1 "hello" server on SwiftNIO's NIOHTTP1 (the standard server pipeline:
// request decoder, response encoder, pipelining helper), the peer of the project's http-hello.
// Every request is answered with 200, "Content-Length: 5", "Content-Type: text/plain" and the body "hello".
//
//     nio-http-server --port 8080 [--host 127.0.0.1] [--loops N]     (one loop by default)
import NIOCore
import NIOHTTP1
import NIOPosix
import PeerNIOSupport
import PeerServerSupport

let body = ByteBuffer(string: "hello")
PeerServer.run(name: "nio-http-server", arguments: PeerServerArguments.parse(name: "nio-http-server")) { channel in
    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
    try channel.pipeline.syncOperations.addHandler(HelloHandler(body: body))
}
