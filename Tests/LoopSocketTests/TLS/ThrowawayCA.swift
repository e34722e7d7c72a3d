import Foundation
import XCTest

@testable import LoopSocket

/// A CA made at test time with the `openssl` tool, valid for two days, and a server certificate it signed
/// for `localhost` and 127.0.0.1 (or the names given): trusted by nothing but the tests that hold it.
struct ThrowawayCA {
    let certificate: TLSCertificate
    let serverIdentity: TLSIdentity
}

extension SocketTestCase {
    func makeThrowawayCA(serverNames: String = "DNS:localhost,IP:127.0.0.1") throws -> ThrowawayCA {
        let directory = try makeTempDirectory()
        let config = directory.file("openssl.cnf")
        try Data("""
            [req]
            distinguished_name = dn
            [dn]
            [ca]
            basicConstraints = critical,CA:TRUE
            keyUsage = critical,keyCertSign,cRLSign
            subjectKeyIdentifier = hash
            [server]
            basicConstraints = critical,CA:FALSE
            subjectAltName = \(serverNames)
            extendedKeyUsage = serverAuth
            authorityKeyIdentifier = keyid
            subjectKeyIdentifier = hash

            """.utf8).write(to: URL(fileURLWithPath: config))
        let newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        let (caKey, caPEM) = (directory.file("ca.key"), directory.file("ca.pem"))
        let (key, request, pem) = (directory.file("server.key"), directory.file("server.csr"), directory.file("server.pem"))
        for arguments in [
            ["req", "-x509", "-config", config, "-extensions", "ca"] + newKey
                + ["-keyout", caKey, "-out", caPEM, "-days", "2", "-subj", "/CN=Throwaway test CA"],
            ["req", "-new", "-config", config] + newKey + ["-keyout", key, "-out", request, "-subj", "/CN=localhost"],
            ["x509", "-req", "-in", request, "-CA", caPEM, "-CAkey", caKey, "-set_serial", "2", "-days", "2",
             "-extfile", config, "-extensions", "server", "-out", pem],
        ] {
            let tool = try launchPeer("openssl", arguments)
            XCTAssertEqual(try tool.waitForExit(), 0, tool.transcript)
        }
        return ThrowawayCA(
            certificate: try XCTUnwrap(TLSCertificate.certificates(pemFile: caPEM).first),
            serverIdentity: try TLSIdentity(certificateChainFile: pem, privateKeyFile: key))
    }
}
