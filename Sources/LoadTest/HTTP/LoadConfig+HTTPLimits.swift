/// How much of a response http mode reads before it gives up on it, so that a server cannot make loadtest hold
/// or read without bound.
package struct HTTPResponseLimits: Sendable, Equatable {
    /// The longest response head, and the most bytes of trailer fields after a chunked body (`--max-head`);
    /// longer: a `head_too_large` error. nginx reading an upstream's response head: `proxy_buffer_size`, one
    /// memory page (4 or 8 KiB).
    package var maxHead = 8 << 10
    /// The longest response body (`--max-body`), announced by `Content-Length` or counted as chunks arrive;
    /// longer: a `body_too_large` error. nginx's body limit, `client_max_body_size`, is 1 MiB. Bodies are read
    /// in pieces of at most ``piece`` bytes and never held whole, so memory does not grow with this.
    package var maxBody = 1 << 20

    /// The most body bytes read at once (a longer body is read, and checked, piece by piece).
    static let piece = 64 << 10

    /// The defaults.
    package init() {}
}
