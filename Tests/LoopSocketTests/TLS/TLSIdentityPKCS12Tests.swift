import COpenSSL
import EpollLoop
import Foundation
import SharedTestSupport
import XCTest

@testable import LoopSocket

/// `TLSIdentity(pkcs12:password:)` on every form the usual tools write: Apple's and OpenSSL 1.x's (RC2 and
/// 3DES, which OpenSSL 3 keeps in its legacy provider) and OpenSSL 3's (AES-256 with PBKDF2). The fixtures are
/// made by `openssl pkcs12 -export` from the test CA's server identity as the test runs, and each is checked to
/// hold the algorithms it is named for, so that no test passes on a form it did not read.
final class TLSIdentityPKCS12Tests: TLSTestCase {
    private static let password = "p12 pass"

    // MARK: The forms tools write

    func testOpenSSL3DefaultAES256WithPBKDF2() throws {
        let data = try export([], certificateFile: "ca.pem")
        try assertAlgorithms(data, [.pbes2, .aes256CBC], not: [.rc2_40, .tripleDES])
        let identity = try TLSIdentity(pkcs12: data, password: Self.password)
        try assertServerIdentity(identity, chain: ["ca.pem"])
    }

    func testLegacyRC2_40CertificatesAnd3DESKeyAsAppleWritesThem() throws {
        let data = try export(["-legacy"])
        try assertAlgorithms(data, [.rc2_40, .tripleDES], not: [.pbes2])
        try assertServerIdentity(TLSIdentity(pkcs12: data, password: Self.password))
    }

    /// `-descert`: the certificates under 3DES, the key under OpenSSL 3's AES-256.
    func testTripleDESCertificates() throws {
        let data = try export(["-descert"])
        try assertAlgorithms(data, [.tripleDES, .pbes2], not: [.rc2_40])
        try assertServerIdentity(TLSIdentity(pkcs12: data, password: Self.password))
    }

    func testRC2_128() throws {
        let data = try export(["-legacy", "-certpbe", "PBE-SHA1-RC2-128", "-keypbe", "PBE-SHA1-RC2-128"])
        try assertAlgorithms(data, [.rc2_128], not: [.rc2_40, .tripleDES, .pbes2])
        try assertServerIdentity(TLSIdentity(pkcs12: data, password: Self.password))
    }

    /// The key under RC2-40 too, not only the certificates.
    func testRC2_40Key() throws {
        let data = try export(["-legacy", "-certpbe", "PBE-SHA1-3DES", "-keypbe", "PBE-SHA1-RC2-40"])
        try assertAlgorithms(data, [.rc2_40, .tripleDES], not: [.pbes2])
        try assertServerIdentity(TLSIdentity(pkcs12: data, password: Self.password))
    }

    func testExplicitAES256CBC() throws {
        let data = try export(["-certpbe", "AES-256-CBC", "-keypbe", "AES-256-CBC", "-macalg", "sha512"])
        try assertAlgorithms(data, [.pbes2, .aes256CBC], not: [.rc2_40, .tripleDES])
        try assertServerIdentity(TLSIdentity(pkcs12: data, password: Self.password))
    }

    /// Certificates stored unencrypted, the key under 3DES.
    func testUnencryptedCertificates() throws {
        let data = try export(["-certpbe", "NONE", "-keypbe", "PBE-SHA1-3DES"])
        try assertAlgorithms(data, [.tripleDES], not: [.rc2_40, .pbes2])
        try assertServerIdentity(TLSIdentity(pkcs12: data, password: Self.password))
    }

    /// No MAC: the password is checked by decrypting, and a wrong one is still a wrong password.
    func testWithoutMAC() throws {
        let data = try export(["-nomac"])
        try assertServerIdentity(TLSIdentity(pkcs12: data, password: Self.password))
        assertThrows(.wrongPassword, try TLSIdentity(pkcs12: data, password: "wrong"))
    }

    /// PKCS#12 tells no password from an empty one; an empty password opens data exported with either.
    func testEmptyPassword() throws {
        for options in [[], ["-legacy"]] {
            let data = try export(options, password: "")
            try assertServerIdentity(TLSIdentity(pkcs12: data, password: ""))
            assertThrows(.wrongPassword, try TLSIdentity(pkcs12: data, password: "x"))
        }
    }

    /// The identity read from the legacy form serves TLS: its key and certificates live in the default context,
    /// not the PKCS#12 one, and that context never gives TLS (or anything else) RC2.
    func testLegacyIdentityServesTLSAndTheDefaultContextStillHasNoRC2() throws {
        let identity = try TLSIdentity(pkcs12: export(["-legacy"]), password: Self.password)
        let serverDelegate = makeDelegate("server")
        let server = try makeTLSEchoServer(serverDelegate, .server(identity: identity))
        let clientDelegate = makeDelegate("client")
        let client = try connectTLSClient(clientDelegate, port: server.localPort, Self.client())
        waitForSecure(clientDelegate, client)

        let rc2 = EVP_CIPHER_fetch(nil, "RC2-40-CBC", nil)
        ERR_clear_error()
        XCTAssertNil(rc2, "RC2 reached OpenSSL's default library context")
        EVP_CIPHER_free(rc2)
    }

    /// Loads from several threads at once, the first of them possibly making the shared reader's context.
    func testConcurrentLoads() throws {
        let data = try export(["-legacy"], certificateFile: "ca.pem")
        let results = Locked<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let count = (try? TLSIdentity(pkcs12: data, password: Self.password))?.certificates.count ?? 0
            results.withLock { $0.append(count) }
        }
        XCTAssertEqual(results.withLock { $0 }, Array(repeating: 2, count: 8))
    }

    // MARK: Committed copies

    /// A committed identity in the legacy form (`make-certificates.py` writes it with `openssl pkcs12 -export
    /// -legacy`, chain included) reads as one made now the same way does.
    func testCommittedLegacyIdentityMatchesOneMadeNow() throws {
        let committed = try Data(contentsOf: URL(fileURLWithPath: TestCertificates.path("server-legacy.p12")))
        try assertAlgorithms(committed, [.rc2_40, .tripleDES], not: [.pbes2])
        let identity = try TLSIdentity(pkcs12: committed, password: "test-password")
        try assertServerIdentity(identity, chain: ["ca.pem"])
        let fresh = try TLSIdentity(pkcs12: export(["-legacy"], certificateFile: "ca.pem"), password: Self.password)
        XCTAssertEqual(identity.certificates.map(\.derBytes), fresh.certificates.map(\.derBytes))
        assertThrows(.wrongPassword, try TLSIdentity(pkcs12: committed, password: "test-passwore"))
    }

    // MARK: Failures, each its own

    func testWrongPassword() throws {
        for options in [[], ["-legacy"]] {
            let data = try export(options)
            let error = assertThrows(.wrongPassword, try TLSIdentity(pkcs12: data, password: "wrong"))
            XCTAssertTrue(error?.reason.contains("MAC") == true, "\(String(describing: error))")
            XCTAssertEqual((error as NSError?)?.code, -9848, "bridged as errSSLBadConfiguration")
        }
    }

    func testTruncatedAndForeignData() throws {
        let data = try export(["-legacy"])
        for cut in [data.count / 2, data.count - 1, 1] {
            assertThrows(.malformedData, try TLSIdentity(pkcs12: data.prefix(cut), password: Self.password), "cut to \(cut)")
        }
        let empty = assertThrows(.malformedData, try TLSIdentity(pkcs12: Data(), password: Self.password))
        XCTAssertTrue(empty?.reason.contains("no data") == true, "\(String(describing: empty))")
        let pem = try Data(contentsOf: URL(fileURLWithPath: TestCertificates.path("server.pem")))
        assertThrows(.malformedData, try TLSIdentity(pkcs12: pem, password: Self.password))
    }

    /// Damage inside the encrypted certificates, under a MAC that verifies for the password, is damaged data,
    /// not a wrong password.
    func testDamagedContentsUnderAValidMAC() throws {
        var bytes = try [UInt8](export(["-legacy"]))
        // The certificates' RC2 parameters follow its OID: SEQUENCE { salt OCTET STRING (8 bytes), iterations
        // INTEGER 2048 }. 2049 iterations derive another key, so the certificates decrypt to garbage.
        let iterations: [UInt8] = [0x02, 0x02, 0x08, 0x00]
        guard let rc2 = bytes.firstRange(of: Algorithm.rc2_40.der),
              let count = bytes[rc2.upperBound...].firstRange(of: iterations), count.lowerBound - rc2.upperBound == 12
        else { return XCTFail("the fixture's RC2 parameters are not where they were") }
        bytes[count.upperBound - 1] = 0x01
        assertThrows(.wrongPassword, try TLSIdentity(pkcs12: Data(bytes), password: Self.password), "before the new MAC")
        let damaged = try remac(Data(bytes))
        let error = assertThrows(.malformedData, try TLSIdentity(pkcs12: damaged, password: Self.password))
        XCTAssertTrue(error?.reason.contains("damaged") == true, "\(String(describing: error))")
    }

    func testMissingLegacyProviderIsNamedAlongWithTheAlgorithm() throws {
        // A modules directory without legacy.so, as on a system whose OpenSSL ships without it.
        let reader = PKCS12Reader(modulesDirectory: TestCertificates.directory)
        XCTAssertNotNil(reader.legacyProviderFailure)
        let cases: [([String], [String])] = [
            (["-legacy"], ["certificates", "pbeWithSHA1And40BitRC2-CBC", "RC2-40-CBC"]),
            (Self.singleDESKey, ["private key", "PBES2", "des-cbc"]),
            (Self.md4MAC, ["integrity check (MAC)", "md4"]),
        ]
        for (options, phrases) in cases {
            let error = assertThrows(.unsupportedAlgorithm, try reader.open(export(options), password: Self.password), "\(options)")
            for phrase in phrases + ["legacy provider", "legacy.so"] {
                XCTAssertTrue(error?.reason.contains(phrase) == true, "\(phrase) missing from \(String(describing: error))")
            }
        }
        // OpenSSL 3's own form needs nothing from it.
        let (key, certificates) = try reader.open(export([]), password: Self.password)
        EVP_PKEY_free(key)
        XCTAssertEqual(certificates.count, 1)
        // The shared reader found its legacy provider where OpenSSL installs it.
        XCTAssertNil(PKCS12Reader.shared.legacyProviderFailure)
    }

    /// The rest of what the legacy provider brings: single DES (under PBES2 here) and an MD4 MAC.
    func testSingleDESKeyAndMD4MAC() throws {
        for options in [Self.singleDESKey, Self.md4MAC] {
            try assertServerIdentity(TLSIdentity(pkcs12: export(options), password: Self.password))
        }
    }

    private static let singleDESKey = ["-legacy", "-certpbe", "AES-256-CBC", "-keypbe", "DES-CBC"]
    private static let md4MAC = ["-legacy", "-macalg", "md4", "-certpbe", "AES-256-CBC", "-keypbe", "AES-256-CBC"]

    func testKeyOrCertificateMissing() throws {
        let noKey = assertThrows(.badConfiguration, try TLSIdentity(pkcs12: export(["-nokeys"]), password: Self.password))
        XCTAssertTrue(noKey?.reason.contains("no private key") == true, "\(String(describing: noKey))")
        let noCertificate = assertThrows(
            .badConfiguration, try TLSIdentity(pkcs12: export(["-nocerts"]), password: Self.password))
        XCTAssertTrue(noCertificate?.reason.contains("no certificate") == true, "\(String(describing: noCertificate))")
    }

    // MARK: Iteration limit

    /// A MAC asking for 2³¹−1 iterations (minutes of CPU to check) is refused before any is run: its value
    /// is left uncomputed, so a reader that ran them would end, minutes later, on a wrong password instead.
    func testHugeMACIterationCountIsRefusedWithoutTheWork() throws {
        let data = try withMAC(export([]), iterations: Int32.max)
        let error = assertThrows(.iterationLimitExceeded, try TLSIdentity(pkcs12: data, password: Self.password))
        for phrase in ["integrity check (MAC)", "2147483647", "1000000"] {
            XCTAssertTrue(error?.reason.contains(phrase) == true, "\(phrase) missing from \(String(describing: error))")
        }
        XCTAssertEqual((error as NSError?)?.code, -9848, "bridged as errSSLBadConfiguration")
    }

    /// Every count is charged before its key is derived, the MAC's, the certificates' and the key's, in
    /// PKCS#12's own encryption (salt and count) and in PBES2 (PBKDF2's count); the data opens within a limit
    /// of their sum and not one iteration below it.
    func testEveryCountIsChargedAgainstTheLimit() throws {
        // MAC 2,048; certificates and key 20,000 each (PBKDF2), as Python's cryptography writes them.
        let pbes2 = try Data(contentsOf: URL(fileURLWithPath: TestCertificates.path("server.p12")))
        // MAC, certificates (RC2-40) and key (3DES) 2,048 each.
        let legacy = try Data(contentsOf: URL(fileURLWithPath: TestCertificates.path("server-legacy.p12")))
        let cases: [(Data, [(Int, String)], Int)] = [
            (pbes2, [(2_047, "integrity check (MAC)"), (22_047, "certificates"), (42_047, "private key")], 42_048),
            (legacy, [(2_047, "integrity check (MAC)"), (4_095, "certificates"), (6_143, "private key")], 6_144),
        ]
        for (data, refusals, enough) in cases {
            for (limit, phrase) in refusals {
                let error = assertThrows(
                    .iterationLimitExceeded,
                    try TLSIdentity(pkcs12: data, password: "test-password", iterationLimit: limit), "limit \(limit)")
                XCTAssertTrue(error?.reason.contains(phrase) == true, "\(phrase) missing from \(String(describing: error))")
            }
            let identity = try TLSIdentity(pkcs12: data, password: "test-password", iterationLimit: enough)
            XCTAssertEqual(identity.certificates.first?.subject.contains("CN=localhost"), true)
        }
        // Without the limit given, the default takes either.
        XCTAssertEqual(TLSIdentity.defaultPKCS12IterationLimit, 1_000_000)
        _ = try TLSIdentity(pkcs12: pbes2, password: "test-password")
    }

    /// Data with neither a MAC nor encryption costs no iterations; a limit of 0 (or less) opens only that.
    func testUnprotectedDataOpensUnderAZeroLimit() throws {
        let plain = try export(["-nomac", "-certpbe", "NONE", "-keypbe", "NONE"])
        try assertServerIdentity(TLSIdentity(pkcs12: plain, password: Self.password, iterationLimit: 0))
        assertThrows(.iterationLimitExceeded, try TLSIdentity(pkcs12: export([]), password: Self.password, iterationLimit: -1))
    }

    // MARK: Helpers

    /// `data` with its MAC set up for `iterations`, its value left uncomputed (the reader must refuse the
    /// count before it would check the value).
    private func withMAC(_ data: Data, iterations: Int32) throws -> Data {
        let p12: OpaquePointer? = data.withUnsafeBytes { raw in
            var cursor = raw.bindMemory(to: UInt8.self).baseAddress.map { UnsafePointer($0) }
            return d2i_PKCS12(nil, &cursor, raw.count)
        }
        guard let p12 else { throw ToolFailed(description: "d2i_PKCS12 failed") }
        defer { PKCS12_free(p12) }
        guard PKCS12_setup_mac(p12, iterations, nil, 0, EVP_sha256()) == 1 else {
            throw ToolFailed(description: "PKCS12_setup_mac failed")
        }
        return try der(p12)
    }

    private func der(_ p12: OpaquePointer) throws -> Data {
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_PKCS12(p12, &out)
        guard length > 0, let out else { throw ToolFailed(description: "i2d_PKCS12 failed") }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Data(bytes: out, count: Int(length))
    }

    /// The PKCS#12 algorithm identifiers (their DER, OID tag included) the fixtures are checked for.
    private enum Algorithm: String {
        case rc2_40 = "pbeWithSHA1And40BitRC2-CBC"  // 1.2.840.113549.1.12.1.6
        case rc2_128 = "pbeWithSHA1And128BitRC2-CBC"  // 1.2.840.113549.1.12.1.5
        case tripleDES = "pbeWithSHA1And3-KeyTripleDES-CBC"  // 1.2.840.113549.1.12.1.3
        case pbes2 = "PBES2"  // 1.2.840.113549.1.5.13
        case aes256CBC = "AES-256-CBC"  // 2.16.840.1.101.3.4.1.42

        var der: [UInt8] {
            let pkcs12PBE: [UInt8] = [0x06, 0x0A, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x0C, 0x01]
            switch self {
            case .rc2_40: return pkcs12PBE + [0x06]
            case .rc2_128: return pkcs12PBE + [0x05]
            case .tripleDES: return pkcs12PBE + [0x03]
            case .pbes2: return [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x05, 0x0D]
            case .aes256CBC: return [0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x01, 0x2A]
            }
        }
    }

    /// `openssl pkcs12 -export` of the test CA's server certificate and key with `options` (and the
    /// certificates in `certificateFile` as its chain), as DER.
    private func export(_ options: [String], password: String = password, certificateFile: String? = nil) throws -> Data {
        var arguments = ["pkcs12", "-export", "-in", TestCertificates.path("server.pem"),
                         "-inkey", TestCertificates.path("server.key"), "-passout", "pass:\(password)"]
        if let certificateFile { arguments += ["-certfile", TestCertificates.path(certificateFile)] }
        return try run("openssl", arguments + options)
    }

    /// `data` with its MAC made anew for the test password (SHA-1, 2048 iterations, as `-legacy` makes it).
    private func remac(_ data: Data) throws -> Data {
        let p12: OpaquePointer? = data.withUnsafeBytes { raw in
            var cursor = raw.bindMemory(to: UInt8.self).baseAddress.map { UnsafePointer($0) }
            return d2i_PKCS12(nil, &cursor, raw.count)
        }
        guard let p12 else { throw ToolFailed(description: "d2i_PKCS12 failed") }
        defer { PKCS12_free(p12) }
        guard PKCS12_set_mac(p12, Self.password, -1, nil, 0, 2048, EVP_sha1()) == 1 else {
            throw ToolFailed(description: "PKCS12_set_mac failed")
        }
        return try der(p12)
    }

    /// Runs `tool` to its end (bounded) and returns its stdout, failing on a non-zero status.
    private func run(_ tool: String, _ arguments: [String]) throws -> Data {
        let process = try launchPeer(tool, arguments)
        let status = try process.waitForExit()
        guard status == 0 else { throw ToolFailed(description: "\(tool) exited with \(status): \(process.transcript)") }
        return process.stdoutBytes
    }

    private struct ToolFailed: Error, CustomStringConvertible {
        let description: String
    }

    /// Fails unless `data` holds each of `expected` and none of `unexpected`.
    private func assertAlgorithms(
        _ data: Data, _ expected: [Algorithm], not unexpected: [Algorithm], file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let bytes = [UInt8](data)
        for algorithm in expected {
            XCTAssertNotNil(bytes.firstRange(of: algorithm.der), "no \(algorithm.rawValue) in the fixture", file: file, line: line)
        }
        for algorithm in unexpected {
            XCTAssertNil(bytes.firstRange(of: algorithm.der), "\(algorithm.rawValue) in the fixture", file: file, line: line)
        }
    }

    /// Fails unless `identity` is the test CA's server certificate (the key was checked against it on
    /// loading), followed by the certificates in `chain`.
    private func assertServerIdentity(
        _ identity: TLSIdentity, chain: [String] = [], file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let expected = try (["server.pem"] + chain).flatMap { try TLSCertificate.certificates(pemFile: TestCertificates.path($0)) }
        XCTAssertEqual(identity.certificates.map(\.derBytes), expected.map(\.derBytes), file: file, line: line)
    }

    /// Fails unless `body` throws a ``TLSError`` with `code`; returns it.
    @discardableResult
    private func assertThrows<T>(
        _ code: TLSError.Code, _ body: @autoclosure () throws -> T, _ message: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) -> TLSError? {
        do {
            _ = try body()
            XCTFail("no error, expected \(code) \(message)", file: file, line: line)
            return nil
        } catch let error as TLSError {
            XCTAssertEqual(error.code, code, "\(error) \(message)", file: file, line: line)
            return error
        } catch {
            XCTFail("\(error), expected a TLSError \(code) \(message)", file: file, line: line)
            return nil
        }
    }
}
