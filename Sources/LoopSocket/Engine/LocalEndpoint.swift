import Glibc

/// An IPv4 or IPv6 address and port, as a table key.
struct LocalEndpoint: Hashable, Sendable {
    let family: Int32
    let port: UInt16
    /// The address's 4 or 16 bytes (network order), zero-padded.
    let high: UInt64
    let low: UInt64

    /// `address`'s endpoint; nil for a Unix-domain address.
    init?(_ address: SocketAddress) {
        switch address.storage {
        case .v4(let sin):
            family = AF_INET
            port = sin.sin_port
            high = UInt64(sin.sin_addr.s_addr)
            low = 0
        case .v6(let sin6):
            family = AF_INET6
            port = sin6.sin6_port
            (high, low) = withUnsafeBytes(of: sin6.sin6_addr) { ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
        case .unix:
            return nil
        }
    }

    private init(family: Int32, port: UInt16, high: UInt64, low: UInt64) {
        self.family = family
        self.port = port
        self.high = high
        self.low = low
    }

    /// The same port on the family's any-address (`0.0.0.0`, `::`).
    var wildcard: LocalEndpoint { LocalEndpoint(family: family, port: port, high: 0, low: 0) }

    /// `127.0.0.0/8` or `::1`.
    var isLoopback: Bool {
        if family == AF_INET { return UInt8(truncatingIfNeeded: high) == 127 }  // first byte in network order
        return high == 0 && low == UInt64(1).bigEndian
    }

    /// Whether the two are the same address (ports aside).
    func sameAddress(as other: LocalEndpoint) -> Bool {
        family == other.family && high == other.high && low == other.low
    }
}
