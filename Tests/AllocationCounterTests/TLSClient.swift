import COpenSSL
import Foundation
import SharedTestSupport

/// A blocking TLS client over a ``LoopbackClient`` (whose socket timeouts bound every read and write), with
/// OpenSSL called directly; it does not check the server's certificate, as only the server's allocations
/// are measured.
final class TLSClient: ByteStream {
    private let connection: LoopbackClient
    private let context: OpaquePointer
    private let ssl: OpaquePointer

    /// Connected to 127.0.0.1:`port`, the handshake done.
    init(port: UInt16) throws {
        connection = try LoopbackClient(port: port)
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw TLSClientError("SSL_CTX_new failed") }
        self.context = context
        SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        guard let ssl = SSL_new(context) else {
            SSL_CTX_free(context)
            throw TLSClientError("SSL_new failed")
        }
        self.ssl = ssl
        SSL_set_fd(ssl, connection.fd)
        guard SSL_connect(ssl) == 1 else { throw TLSClientError("handshake failed: SSL error \(SSL_get_error(ssl, -1))") }
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
    }

    func send(_ bytes: [UInt8]) throws {
        let written = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        guard written == bytes.count else { throw TLSClientError("SSL_write failed: SSL error \(SSL_get_error(ssl, written))") }
    }

    func receiveSome(_ buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let n = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        if n > 0 { return Int(n) }
        if SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN { return 0 }
        throw TLSClientError("SSL_read failed: SSL error \(SSL_get_error(ssl, n))")
    }
}

/// A TLS step of ``TLSClient`` failed.
struct TLSClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
