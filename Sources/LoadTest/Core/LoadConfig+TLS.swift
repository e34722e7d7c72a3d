import Glibc
import LoopSocket

/// loadtest as a TLS client (`--tls`, or an `https://` URL): which server to trust, what to offer, and
/// whether to resume sessions.
package struct LoadTLSSettings: Sendable, Equatable {
    /// Connections start TLS right after connecting.
    package var enabled = false
    /// PEM file of the CA certificates to trust (`--tls-ca`); the system store otherwise.
    package var caFile: String?
    /// Skip certificate verification (`--insecure`), for servers with throwaway certificates.
    package var insecure = false
    /// ALPN protocols to offer (`--alpn h2,http/1.1`).
    package var alpn: [String] = []
    /// Resume sessions (`--tls-resume`): connect mode then measures resumed handshakes. Off by default, so
    /// that every connection makes a full handshake.
    package var resume = false
    /// The name to send and verify (`--tls-server-name`); the host connected to otherwise.
    package var serverName: String?

    /// The defaults (TLS off).
    package init() {}

    /// The client configuration the connections use; nil when TLS is off.
    package var configuration: TLSConfiguration? {
        guard enabled else { return nil }
        var configuration = TLSConfiguration.client(serverName: serverName, alpn: alpn)
        if let caFile { configuration.trustRoots = .file(caFile) }
        if insecure { configuration.certificateVerification = .none }
        configuration.sessionResumption = resume
        return configuration
    }
}

extension CommandLineParser {
    /// Handles `flag` if it is a TLS option; false if it is not.
    static func parseTLSOption(
        _ flag: String, into config: inout LoadConfig, value: () throws(ArgumentError) -> String
    ) throws(ArgumentError) -> Bool {
        switch flag {
        case "--tls":
            config.tls.enabled = true
        case "--tls-ca":
            let path = try value()
            guard access(path, R_OK) == 0 else { throw ArgumentError("--tls-ca: no such file '\(path)'") }
            config.tls.caFile = path
            config.tls.enabled = true
        case "--insecure":
            config.tls.insecure = true
            config.tls.enabled = true
        case "--alpn":
            let list = try value().split(separator: ",").map(String.init)
            guard !list.isEmpty, list.allSatisfy({ !$0.isEmpty && $0.utf8.count < 256 }) else {
                throw ArgumentError("--alpn takes protocol names separated by commas, such as h2,http/1.1")
            }
            config.tls.alpn = list
            config.tls.enabled = true
        case "--tls-resume":
            config.tls.resume = true
            config.tls.enabled = true
        case "--tls-server-name":
            config.tls.serverName = try value()
            config.tls.enabled = true
        default:
            return false
        }
        return true
    }

    /// Refuses TLS where loadtest cannot use it, and checks the settings build (a bad CA file is reported
    /// before the run, not as thousands of connection errors).
    static func checkTLSOptions(_ config: LoadConfig) throws(ArgumentError) {
        guard let configuration = config.tls.configuration else { return }
        if config.mode.startsServer {
            throw ArgumentError("--tls needs a mode and a TLS server "
                                + "(for example: loadtest echo --port 9443 --tls --tls-ca ca.pem)")
        }
        if !config.mode.supportsTLS { throw ArgumentError("--tls does not apply to \(config.mode.name) mode") }
        do {
            try configuration.validate()
        } catch {
            throw ArgumentError("TLS settings: \(error.message)")
        }
    }
}
