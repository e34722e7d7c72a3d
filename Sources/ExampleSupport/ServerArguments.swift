import EpollLoop
import Glibc
import LoopSocket

/// The command line of the example servers: `[--port P] [--host H] [--loops N] [--tls-cert FILE --tls-key FILE]
/// [--metrics HOST:PORT] [--stall-ms N]` (the UDP server: `--reuse-port` instead of the TLS pair), their
/// `--help`, and their SIGINT/SIGTERM handling. They listen on 127.0.0.1 unless `--host` names another
/// interface (or `*` for all), on a free port unless `--port` names one (the port is printed either way),
/// and serve TLS when given a certificate and key.
public struct ServerArguments: Sendable {
    /// What a server is and which of the options it takes: its `--help` says so, and an option it does not
    /// take is an error, not ignored.
    public struct Usage: Sendable {
        /// The program's name.
        public var name: String
        /// What it does, one or two sentences (lines of at most 100 characters).
        public var summary: String
        /// It serves TLS (`--tls-cert`, `--tls-key`).
        public var tls: Bool
        /// It can share its port with other processes on request (`--reuse-port`: UDP).
        public var reusePort: Bool
        /// Options of this server's own, each taking a value: (flag, value's name, help line). What they were
        /// given is in ``ServerArguments/ownOptions``.
        public var own: [(flag: String, value: String, meaning: String)]

        /// A server called `name` doing `summary`, with TLS, without `--reuse-port` unless told, with `own`
        /// options.
        public init(name: String, summary: String, tls: Bool = true, reusePort: Bool = false,
                    own: [(flag: String, value: String, meaning: String)] = []) {
            self.name = name
            self.summary = summary
            self.tls = tls
            self.reusePort = reusePort
            self.own = own
        }

        /// The `--help` text.
        public var text: String {
            var options: [(String, String)] = [
                ("--port P, -p P", "port to listen on (default 0: a free one; the port is printed at start)"),
                ("--host H", "interface address to listen on (default 127.0.0.1; '*': every interface)"),
                ("--loops N", "event loops, a thread each (default: one per core, \(EventLoopGroup.coreCount) here)"),
            ]
            if tls {
                options.append(("--tls-cert FILE", "PEM certificate chain, leaf first: serve TLS (with --tls-key)"))
                options.append(("--tls-key FILE", "PEM private key of the certificate"))
            }
            if reusePort {
                options.append(("--reuse-port", "share the port with other processes that ask for it too (SO_REUSEPORT);"))
                options.append(("", "without it, a port in use is an error"))
            }
            options += own.map { ("\($0.flag) \($0.value)", $0.meaning) }
            options += [
                ("--metrics HOST:PORT", "serve the loops' metrics (Prometheus text) at http://HOST:PORT/metrics;"),
                ("", ":PORT listens on 127.0.0.1; also samples each loop's lag every 10 ms"),
                ("--stall-ms N", "report callbacks that hold a loop longer than N ms (default: off)"),
                ("--help, -h", "print this text"),
                ("--version", "print the version"),
            ]
            let synopsis = "usage: \(name) [--port P] [--host H] [--loops N]" + (tls ? " [--tls-cert FILE --tls-key FILE]" : "")
                + (reusePort ? " [--reuse-port]" : "") + own.map { " [\($0.flag) \($0.value)]" }.joined()
                + " [--metrics HOST:PORT] [--stall-ms N]"
            let lines = options.map { flag, meaning in "  " + flag + String(repeating: " ", count: max(1, 22 - flag.count)) + meaning }
            return ([synopsis, "", summary, "", "Options:"] + lines).joined(separator: "\n")
        }
    }


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
    /// Where to serve the loops' metrics (`GET /metrics`, Prometheus text), if anywhere.
    public var metrics: (host: String, port: UInt16)?
    /// Report callbacks that hold a loop longer than this (`--stall-ms`); nil: the stall detector is off.
    public var stallThreshold: Duration?
    /// Share the port with other processes (`--reuse-port`, servers whose ``Usage`` takes it).
    public var reusePort = false
    /// The values given to the server's own options (``Usage/own``), by flag.
    public var ownOptions: [String: String] = [:]

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
    public static func parse(_ usage: Usage) -> ServerArguments {
        _ = Termination.installed
        var result = ServerArguments()
        var scanner = ArgumentScanner(CommandLine.arguments.dropFirst(), aliases: ["-p": "--port", "-h": "--help"])
        func value(_ flag: String) -> String {
            guard let next = scanner.value() else { fail("\(flag) needs a value") }
            return next
        }
        while let flag = scanner.next() {
            switch flag {
            case "--port":
                guard let port = UInt16(value(flag)) else { fail("--port takes a number from 0 to 65535") }
                result.port = port
            case "--host":
                let host = value(flag)
                result.host = host == "*" ? nil : host
            case "--loops":
                guard let loops = Int(value(flag)), loops >= 1, loops <= 1024 else { fail("--loops takes a number from 1 to 1024") }
                result.loops = loops
            case "--tls-cert" where usage.tls:
                result.tlsCertificate = value(flag)
            case "--tls-key" where usage.tls:
                result.tlsKey = value(flag)
            case "--tls-cert", "--tls-key":
                fail("\(usage.name) does not serve TLS: \(flag) does not apply (try --help)")
            case "--reuse-port" where usage.reusePort:
                result.reusePort = true
            case "--metrics":
                let text = value(flag)
                guard let address = ArgumentScanner.hostPort(text) else {
                    fail("--metrics takes HOST:PORT (for example 127.0.0.1:9464 or :9464), not '\(text)'")
                }
                result.metrics = address
            case "--stall-ms":
                guard let ms = Int(value(flag)), ms >= 1 else { fail("--stall-ms takes a number of milliseconds, at least 1") }
                result.stallThreshold = .milliseconds(ms)
            case "--help":
                announce(usage.text)
                exit(0)
            case "--version":
                announce("\(usage.name) \(EpollLoopVersion.current)")
                exit(0)
            case _ where usage.own.contains { $0.flag == flag }:
                result.ownOptions[flag] = value(flag)
            default:
                fail("unknown option \(flag) (try --help)")
            }
        }
        if (result.tlsCertificate == nil) != (result.tlsKey == nil) { fail("--tls-cert and --tls-key go together") }
        return result
    }

    /// The event loops `--loops` asks for, named `name`, with `--stall-ms`'s detector, returning the memory
    /// the server frees to the kernel (``EventLoopGroup/startReturningFreeMemory(every:threshold:)``, every
    /// 10 s); exits with a message if they cannot start.
    public func makeGroup(name: String) -> EventLoopGroup {
        do {
            let group = try EventLoopGroup(numberOfLoops: loops, name: name, stallThreshold: stallThreshold)
            // What a long-running server should do on glibc: RSS comes back down after a burst.
            try group.startReturningFreeMemory()
            return group
        } catch {
            Self.fail("cannot start event loops: \(error)")
        }
    }

    /// Runs `start`, which listens on ``host`` and ``port``, and returns its result; exits with a message if
    /// it throws.
    public func listen<Listener>(_ start: () throws -> Listener) -> Listener {
        do {
            return try start()
        } catch {
            Self.fail("cannot listen on \(host ?? "*"):\(port): \(error)")
        }
    }

    /// Serves `group`'s metrics at `GET /metrics` on the `--metrics` address (nil without the option), with
    /// each loop's lag probe on at its default resolution, and announces where; exits with a message if it
    /// cannot listen there; `appending` adds the server's own lines to the loops' page. Close it before
    /// shutting the group down.
    public func serveMetrics(of group: EventLoopGroup, appending: (@Sendable () -> String)? = nil) -> LoopMetricsServer? {
        guard let metrics else { return nil }
        do {
            try group.startLagProbe()
            let server = try LoopMetricsServer(host: metrics.host, port: metrics.port, loop: group.loops[0]) {
                group.prometheusText() + (appending?() ?? "")
            }
            Self.announce("metrics on http://\(metrics.host.contains(":") ? "[\(metrics.host)]" : metrics.host):\(server.port)/metrics")
            return server
        } catch {
            Self.fail("cannot serve metrics on \(metrics.host):\(metrics.port): \(error)")
        }
    }

    /// Announces `server` listening on `port` (the one it got, for `--port 0`) with `loops` loops, the line
    /// scripts and tests wait for.
    public func announceListening(_ server: String, port: UInt16, loops: Int, tls: Bool) {
        Self.announce("\(server) listening on \(host ?? "*") port \(port) with \(loops) loop(s)\(tls ? ", TLS" : "")")
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
        Termination.wait()
    }
}

/// SIGINT and SIGTERM, caught from the moment the command line is parsed: a stop sent as soon as the server
/// announces itself (a script, a test) still ends it through its clean shutdown. A plain handler installed
/// with `signal` (synchronously, unlike a Dispatch signal source, which is armed later on Dispatch's own
/// queue and lost a SIGTERM sent in between) posts a semaphore, the one async-signal-safe thing it needs.
private enum Termination {
    /// Posted by the handler; never freed (the process's whole life).
    nonisolated(unsafe) static let stop: UnsafeMutablePointer<sem_t> = {
        let stop = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        sem_init(stop, 0, 0)
        return stop
    }()

    /// Installs the handler for both signals (once: `parse` calls it).
    static let installed: Void = {
        _ = stop
        for sig in [SIGINT, SIGTERM] {
            signal(sig) { _ in sem_post(Termination.stop) }
        }
    }()

    /// Blocks until a signal has posted the semaphore.
    static func wait() {
        while sem_wait(stop) != 0 && errno == EINTR {}
    }
}
