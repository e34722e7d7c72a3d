import CEpollShim
import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc

/// Listening and accepting. Accepted sockets are spread over the listener's event loop group.
extension GCDAsyncSocket {
    /// Listens on every interface, IPv4 and IPv6 (each as enabled), on `port` (0: the OS picks one, the same
    /// for both families; read it from ``localPort``).
    public func accept(onPort port: UInt16) throws {
        try accept(onInterface: nil, port: port)
    }

    /// Listens on `interface`: nil for all, `"localhost"`/`"loopback"`, a numeric IPv4 or IPv6 address, or an
    /// interface name such as `"lo"`.
    ///
    /// - Throws: ``GCDAsyncSocketError`` — `badConfigError` if already connected or listening, or if both
    ///   families are disabled; `badParamError` for an unknown interface; `otherError` with the errno when
    ///   `socket`, `bind` or `listen` fails (for example `EADDRINUSE`).
    public func accept(onInterface interface: String?, port: UInt16) throws {
        let configuration = try claimForStart(.listenAsked)
        let addresses: [SocketAddress]
        do {
            addresses = try Self.listenAddresses(interface: interface, port: port, configuration)
        } catch {
            releaseClaim()
            throw error
        }
        try GCDAsyncSocketError.reporting { () throws(ConnectionError) in
            try listen(on: addresses, configuration: configuration)
        }
    }

    /// Listens on a Unix-domain socket at `url`'s path, replacing a stale socket file left there.
    ///
    /// - Throws: ``GCDAsyncSocketError`` — `badParamError` for a path too long for `sun_path`, `otherError` with
    ///   the errno if the socket cannot be created or bound.
    public func accept(on url: URL) throws {
        let configuration = try claimForStart(.listenAsked)
        guard let address = SocketAddress(unixPath: url.path) else {
            releaseClaim()
            throw GCDAsyncSocketError(.badParamError, "Unix socket path is empty or longer than 107 bytes: \(url.path)")
        }
        try GCDAsyncSocketError.reporting { () throws(ConnectionError) in
            try listen(onUnix: address, configuration: configuration)
        }
    }

    /// Claims the socket for a connect, a listen or an adoption (``ConnectionEngine/claim(for:)``), after
    /// GCDAsyncSocket's first check for a connect: a delegate to tell its outcome to.
    func claimForStart(_ start: ConnectionState.Event) throws -> Configuration {
        guard start != .connectAsked || withLock({ reportedDelegate }) != nil else {
            throw GCDAsyncSocketError(.badConfigError, "Attempting to connect without a delegate. Set a delegate first.")
        }
        return try GCDAsyncSocketError.reporting { () throws(ConnectionError) in try claim(for: start) }
    }

    /// The addresses to listen on for an interface description.
    static func listenAddresses(interface: String?, port: UInt16, _ configuration: Configuration) throws -> [SocketAddress] {
        var result: [SocketAddress] = []
        switch interface {
        case nil, "":
            if configuration.ipv4Enabled { result.append(.any(family: AF_INET, port: port)) }
            if configuration.ipv6Enabled { result.append(.any(family: AF_INET6, port: port)) }
        case "localhost", "loopback":
            if configuration.ipv4Enabled { result.append(SocketAddress(numericHost: "127.0.0.1", port: port)!) }
            if configuration.ipv6Enabled { result.append(SocketAddress(numericHost: "::1", port: port)!) }
        case let name?:
            if let numeric = SocketAddress(numericHost: name, port: port) {
                result.append(numeric)
            } else {
                result = SocketAddress.interfaceAddresses(name, port: port)
            }
            result = result.filter { ($0.isIPv4 && configuration.ipv4Enabled) || ($0.isIPv6 && configuration.ipv6Enabled) }
        }
        guard !result.isEmpty else {
            throw GCDAsyncSocketError(.badParamError, "Unknown interface, or no address of an enabled family: \(interface ?? "any")")
        }
        return result
    }
}
