import Dispatch
import EpollLoop
import Glibc
import LoopSocket

/// The command line of the example servers: `--port P [--host H] [--loops N] [--tls-cert FILE --tls-key FILE]`,
/// and their SIGINT/SIGTERM handling. They listen on 127.0.0.1 unless `--host` names another interface (or `*`
/// for all), and serve TLS when given a certificate and key.
public struct ServerArguments: Sendable {
    /// The port to listen on (0: any free port, printed at start).
    public var port: UInt16 = 0
    /// The interface to listen on: the loopback address unless `--host` says otherwise (`--host '*'`: every
    /// interface, nil), so that trying an example exposes nothing to the network.
    public var host: String? = "127.0.0.1"
    /// Event loops to run (default: one per core).
    public var loops = EventLoopGroup.coreCount
    /// PEM certificate chain (leaf first) and private key: serve TLS when both are given.
    public var tlsCertificate: String?
    public var tlsKey: String?

    /// The server TLS configuration from `--tls-cert`/`--tls-key` (nil: plaintext), with `alpn` offered;
    /// exits with a message if the files cannot be used.
    public func tlsConfiguration(alpn: [String] = []) -> TLSConfiguration? {
        guard let tlsCertificate, let tlsKey else { return nil }
        do {
            let identity = try TLSIdentity(certificateChainFile: tlsCertificate, privateKeyFile: tlsKey)
            let configuration = TLSConfiguration.server(identity: identity, alpn: alpn)
            try configuration.validate()
            return configuration
        } catch {
            Self.fail("cannot use --tls-cert \(tlsCertificate) --tls-key \(tlsKey): \(error)")
        }
    }

    /// Parses `CommandLine.arguments`, or prints usage and exits.
    public static func parse(name: String) -> ServerArguments {
        _ = Termination.shared
        var result = ServerArguments()
        var rest = CommandLine.arguments.dropFirst()
        func value(_ flag: String) -> String {
            guard let next = rest.popFirst() else { fail("\(flag) needs a value") }
            return next
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--port", "-p":
                guard let port = UInt16(value(flag)) else { fail("--port takes a number from 0 to 65535") }
                result.port = port
            case "--host":
                let host = value(flag)
                result.host = host == "*" ? nil : host
            case "--loops":
                guard let loops = Int(value(flag)), loops >= 1, loops <= 1024 else { fail("--loops takes a number from 1 to 1024") }
                result.loops = loops
            case "--tls-cert":
                result.tlsCertificate = value(flag)
            case "--tls-key":
                result.tlsKey = value(flag)
            case "--help", "-h":
                print("usage: \(name) --port P [--host H (default 127.0.0.1; '*' for all)] [--loops N] [--tls-cert FILE --tls-key FILE]")
                exit(0)
            default:
                fail("unknown option \(flag) (try --help)")
            }
        }
        if (result.tlsCertificate == nil) != (result.tlsKey == nil) { fail("--tls-cert and --tls-key go together") }
        return result
    }

    /// Writes `line` and a newline to standard output at once (unbuffered, so scripts waiting for it see it).
    public static func announce(_ line: String) {
        let text = line + "\n"
        _ = text.withCString { Glibc.write(1, $0, strlen($0)) }
    }

    /// Prints `message` to standard error and exits with status 2.
    public static func fail(_ message: String) -> Never {
        let line = "error: \(message)\n"
        _ = line.withCString { Glibc.write(2, $0, strlen($0)) }
        exit(2)
    }

    /// Blocks until SIGINT or SIGTERM arrives (caught from ``parse(name:)`` on).
    public static func waitForTermination() {
        Termination.shared.stop.wait()
    }
}

/// SIGINT and SIGTERM, caught from the moment the command line is parsed: a stop sent as soon as the server
/// announces itself (a script, a test) still ends it through its clean shutdown, not the signal's default.
private final class Termination: @unchecked Sendable {
    static let shared = Termination()
    let stop = DispatchSemaphore(value: 0)
    /// Kept for the process's life; set once, in `init`.
    private var sources: [DispatchSourceSignal] = []

    private init() {
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [stop] in stop.signal() }
            source.resume()
            sources.append(source)
        }
    }
}
