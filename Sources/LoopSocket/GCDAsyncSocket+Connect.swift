import Dispatch
import EpollLoop
import FoundationEssentials
import Glibc

/// Connecting: nonblocking, with DNS off the loop and Happy Eyeballs (RFC 8305) across every address.
extension GCDAsyncSocket {
    /// Connects to `host` (a name or numeric address) on `port`, with no timeout.
    public func connect(toHost host: String, onPort port: UInt16) throws {
        try connect(toHost: host, onPort: port, viaInterface: nil, withTimeout: -1)
    }

    /// Connects to `host` on `port`; a negative timeout means none.
    public func connect(toHost host: String, onPort port: UInt16, withTimeout timeout: TimeInterval) throws {
        try connect(toHost: host, onPort: port, viaInterface: nil, withTimeout: timeout)
    }

    /// Connects to `host` on `port` from a local interface, optionally with a local port (`"lo"`,
    /// `"127.0.0.1:8082"`, `":8082"`). A negative timeout means none.
    ///
    /// Numeric hosts and `localhost` resolve at once; other names are looked up off the loop. Every address
    /// is tried, alternating families, a new attempt starting every `alternateAddressDelay` until one connects.
    ///
    /// - Throws: ``GCDAsyncSocketError``: `badParamError` for an empty host or a bad interface,
    ///   `badConfigError` if the socket is already connected, connecting or listening. Later failures
    ///   (unknown host, refused, timeout) arrive in `socketDidDisconnect(_:withError:)`.
    public func connect(toHost host: String, onPort port: UInt16, viaInterface interface: String?, withTimeout timeout: TimeInterval) throws {
        guard !host.isEmpty else { throw GCDAsyncSocketError(.badParamError, "Invalid host parameter (nil or \"\"). Should be a domain name or IP address string.") }
        let configuration = try claimForStart(.connectAsked)
        let local = try localBindAddressesOrRelease(interface, configuration)
        try GCDAsyncSocketError.reporting { () throws(ConnectionError) in
            try connect(toHost: host, port: port, configuration: configuration, timeout: timeout, local: local)
        }
    }

    /// Connects to a raw `sockaddr` (IPv4 or IPv6), with no timeout.
    public func connect(toAddress remoteAddr: Data) throws {
        try connect(toAddress: remoteAddr, viaInterface: nil, withTimeout: -1)
    }

    /// Connects to a raw `sockaddr`; a negative timeout means none.
    public func connect(toAddress remoteAddr: Data, withTimeout timeout: TimeInterval) throws {
        try connect(toAddress: remoteAddr, viaInterface: nil, withTimeout: timeout)
    }

    /// Connects to a raw `sockaddr` from a local interface; a negative timeout means none.
    public func connect(toAddress remoteAddr: Data, viaInterface interface: String?, withTimeout timeout: TimeInterval) throws {
        guard let address = SocketAddress(bytes: remoteAddr), !address.isUnix else {
            throw GCDAsyncSocketError(.badParamError, "A remote address must be a sockaddr_in or sockaddr_in6")
        }
        let configuration = try claimForStart(.connectAsked)
        guard (address.isIPv4 && configuration.ipv4Enabled) || (address.isIPv6 && configuration.ipv6Enabled) else {
            releaseClaim()
            throw GCDAsyncSocketError(.badConfigError, "The address's IP family is disabled")
        }
        let local = try localBindAddressesOrRelease(interface, configuration)
        try GCDAsyncSocketError.reporting { () throws(ConnectionError) in
            try connect(to: [address], configuration: configuration, timeout: timeout, local: local)
        }
    }

    /// Connects to the Unix-domain socket at `url`'s path; a negative timeout means none.
    public func connect(to url: URL, withTimeout timeout: TimeInterval) throws {
        guard let address = SocketAddress(unixPath: url.path) else {
            throw GCDAsyncSocketError(.badParamError, "Unix socket path is empty or longer than 107 bytes: \(url.path)")
        }
        let configuration = try claimForStart(.connectAsked)
        try GCDAsyncSocketError.reporting { () throws(ConnectionError) in
            try connect(to: [address], configuration: configuration, timeout: timeout, local: [])
        }
    }

    /// ``localBindAddresses(_:_:)``, giving back the claim if the interface is bad.
    private func localBindAddressesOrRelease(_ interface: String?, _ configuration: Configuration) throws -> [SocketAddress] {
        do {
            return try Self.localBindAddresses(interface, configuration)
        } catch {
            releaseClaim()
            throw error
        }
    }

    /// `"name"`, `"name:port"`, `":port"` or an IP (IPv6 in brackets when a port follows) → local addresses.
    static func localBindAddresses(_ interface: String?, _ configuration: Configuration) throws -> [SocketAddress] {
        guard let interface, !interface.isEmpty else { return [] }
        var name = interface
        var port: UInt16 = 0
        if let colon = interface.lastIndex(of: ":"), interface.filter({ $0 == ":" }).count == 1 || interface.hasPrefix("[") {
            guard let parsed = UInt16(interface[interface.index(after: colon)...]) else {
                throw GCDAsyncSocketError(.badParamError, "Invalid port in interface: \(interface)")
            }
            port = parsed
            name = String(interface[..<colon].filter { $0 != "[" && $0 != "]" })
        }
        if name.isEmpty {
            var any: [SocketAddress] = []
            if configuration.ipv4Enabled { any.append(.any(family: AF_INET, port: port)) }
            if configuration.ipv6Enabled { any.append(.any(family: AF_INET6, port: port)) }
            return any
        }
        return try listenAddresses(interface: name, port: port, configuration)
    }
}
