// nio-https-server: the HTTPS peer of the project's `http-hello --tls-cert --tls-key`: SwiftNIO's HTTP/1.1
// server pipeline behind swift-nio-ssl's NIOSSLServerHandler (BoringSSL inside swift-nio-ssl, not the system
// OpenSSL), TLS 1.2 and 1.3, ALPN http/1.1. Every request is answered with 200, "Content-Length: 5",
// "Content-Type: text/plain" and the body "hello"; connections stay open unless the client says close.
//
//     nio-https-server --port 8443 --cert cert.pem --key key.pem [--host 127.0.0.1] [--loops N]
//
// (`--tls-cert`/`--tls-key` are accepted too, as http-hello spells them.) One event loop by default.
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PeerNIOSupport
import PeerServerSupport

var certificateFile = ""
var keyFile = ""
let arguments = PeerServerArguments.parse(name: "nio-https-server", extraUsage: " --cert FILE --key FILE") { flag, next in
    switch flag {
    case "--cert", "--tls-cert":
        guard let file = next() else { PeerServerArguments.fail("\(flag) needs a file") }
        certificateFile = file
    case "--key", "--tls-key":
        guard let file = next() else { PeerServerArguments.fail("\(flag) needs a file") }
        keyFile = file
    default:
        return false
    }
    return true
}
if certificateFile.isEmpty || keyFile.isEmpty {
    PeerServerArguments.fail("--cert FILE and --key FILE are required")
}

let sslContext: NIOSSLContext
do {
    let chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
    let key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
    var configuration = TLSConfiguration.makeServerConfiguration(
        certificateChain: chain.map { .certificate($0) },
        privateKey: .privateKey(key)
    )
    configuration.minimumTLSVersion = .tlsv12
    configuration.maximumTLSVersion = .tlsv13
    configuration.applicationProtocols = ["http/1.1"]
    sslContext = try NIOSSLContext(configuration: configuration)
} catch {
    PeerServerArguments.fail("cannot load \(certificateFile) / \(keyFile): \(error)")
}

let body = ByteBuffer(string: "hello")
PeerServer.run(name: "nio-https-server", arguments: arguments, suffix: ", TLS") { channel in
    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
    try channel.pipeline.syncOperations.addHandler(HelloHandler(body: body))
}
