import NIOCore
import NIOHTTP1

/// The HTTP peers' handler, behind SwiftNIO's HTTP/1.1 server pipeline: every request is answered with 200,
/// "Content-Length: 5", "Content-Type: text/plain" and the body "hello"; the connection closes after the
/// response when the request says so (over TLS, `close()` sends close_notify through NIOSSLHandler before
/// the FIN, as nginx and http-hello do).
public final class HelloHandler: ChannelInboundHandler {
    public typealias InboundIn = HTTPServerRequestPart
    public typealias OutboundOut = HTTPServerResponsePart

    private let body: ByteBuffer
    private var keepAlive = true
    private var version = HTTPVersion.http1_1

    /// `body`: the response body, one buffer shared by every connection.
    public init(body: ByteBuffer) {
        self.body = body
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            keepAlive = request.isKeepAlive
            version = request.version
        case .body:
            break
        case .end:
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "5")
            headers.add(name: "Content-Type", value: "text/plain")
            if !keepAlive {
                headers.add(name: "Connection", value: "close")
            }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            if keepAlive {
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            } else {
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                    loopBound.value.close(promise: nil)
                }
            }
        }
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
