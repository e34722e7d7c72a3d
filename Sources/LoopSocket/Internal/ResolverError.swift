import Glibc

/// Why a host did not resolve: the faces report it as their own error type (a `badParamError` with
/// ``message``).
struct ResolverError: Error, Equatable, CustomStringConvertible {
    /// What went wrong.
    enum Reason: Equatable {
        /// `getaddrinfo` failed with this status (an `EAI_…` value).
        case lookupFailed(Int32)
        /// It answered with no IPv4 or IPv6 address.
        case noAddress
    }

    /// The host asked for.
    let host: String
    let reason: Reason

    /// A sentence naming the host and the resolver's reason.
    var message: String {
        switch reason {
        case .lookupFailed(let status): "Cannot resolve host '\(host)': \(String(cString: gai_strerror(status)))"
        case .noAddress: "Host '\(host)' has no IPv4 or IPv6 address"
        }
    }

    var description: String { message }
}
