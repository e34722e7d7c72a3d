import FoundationEssentials

/// The client's side of the opening handshake (RFC 6455 section 4.1): the upgrade request with a fresh
/// `Sec-WebSocket-Key`, and the checks on the server's response, `Sec-WebSocket-Accept` among them.
package struct WebSocketHandshake {
    /// The GUID section 1.3 appends to the key before hashing.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    /// The longest response head read while looking for its end; a server sending more fails the handshake.
    package static let maxResponseHead = 16 * 1024

    /// The `Sec-WebSocket-Key`: 16 random bytes in base64.
    let key: String
    /// The subprotocols offered (`--ws-subprotocol`), in order of preference.
    let subprotocols: [String]

    /// A handshake with a fresh random key (or the given one, for tests).
    package init(subprotocols: [String] = [], key: String? = nil) {
        if let key {
            self.key = key
        } else {
            var random = SystemRandomNumberGenerator()
            let bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &random) }
            self.key = Data(bytes).base64EncodedString()
        }
        self.subprotocols = subprotocols
    }

    /// What the server must answer in `Sec-WebSocket-Accept`: base64(SHA-1(key + GUID)).
    package static func accept(for key: String) -> String {
        Data(WebSocketSHA1.digest(Array((key + guid).utf8))).base64EncodedString()
    }

    /// The upgrade request: `GET path`, `Host` (`hostHeader`), the upgrade headers, the offered subprotocols,
    /// then `headers` (`Name: value` lines, in order; a `Host`, `User-Agent` or `Origin` among them replaces
    /// the default, and the handshake's own headers cannot be replaced).
    func request(path: String, hostHeader: String, headers: [String]) -> [UInt8] {
        let given = Set(headers.map { $0.prefix { $0 != ":" }.lowercased() })
        var text = "GET \(path) HTTP/1.1\r\n"
        if !given.contains("host") { text += "Host: \(hostHeader)\r\n" }
        text +=
            "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        if !subprotocols.isEmpty { text += "Sec-WebSocket-Protocol: \(subprotocols.joined(separator: ", "))\r\n" }
        if !given.contains("user-agent") { text += "User-Agent: loadtest\r\n" }
        for header in headers { text += header + "\r\n" }
        return Array((text + "\r\n").utf8)
    }

    /// Checks the server's response head (up to and with its CRLF CRLF): status 101, `Upgrade: websocket`,
    /// `Connection: Upgrade`, the right `Sec-WebSocket-Accept`, no extension (none was offered), and a
    /// subprotocol only if it is one offered. Returns the subprotocol the server chose, if any.
    package func verify(_ head: UnsafeRawBufferPointer) throws(WebSocketError) -> String? {
        let text = String(decoding: head, as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: true).makeIterator()
        guard let statusLine = lines.next() else { throw .handshake("an empty response") }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1.") else {
            throw .handshake("not an HTTP response: \(ServerText.escaped(statusLine, limit: 100))")
        }
        guard parts[1] == "101" else {
            let status = ServerText.escaped(parts[1], limit: 20)
            throw .handshake("HTTP status \(status), not 101: \(ServerText.escaped(statusLine, limit: 100))")
        }
        var fields: [String: [String]] = [:]
        while let line = lines.next() {
            guard let colon = line.firstIndex(of: ":") else {
                throw .handshake("a header line without a colon: \(ServerText.escaped(line, limit: 100))")
            }
            let name = line[..<colon].lowercased()
            let value = trimmed(line[line.index(after: colon)...])
            fields[name, default: []].append(value)
        }
        func tokens(_ name: String) -> [String] {
            (fields[name] ?? []).flatMap { $0.split(separator: ",") }.map { trimmed($0).lowercased() }
        }
        guard tokens("upgrade").contains("websocket") else {
            throw .handshake("no 'Upgrade: websocket' in the response")
        }
        guard tokens("connection").contains("upgrade") else {
            throw .handshake("no 'Connection: Upgrade' in the response")
        }
        let expected = Self.accept(for: key)
        guard let accept = fields["sec-websocket-accept"], accept.count == 1 else {
            throw .handshake("no (or more than one) Sec-WebSocket-Accept in the response")
        }
        guard accept[0] == expected else {
            throw .handshake("Sec-WebSocket-Accept is '\(ServerText.escaped(accept[0], limit: 60))', not '\(expected)'")
        }
        if let extensions = fields["sec-websocket-extensions"], !extensions.allSatisfy(\.isEmpty) {
            let chosen = ServerText.escaped(extensions.joined(separator: ", "), limit: 100)
            throw .handshake("the server chose extensions none were offered: \(chosen)")
        }
        guard let chosen = fields["sec-websocket-protocol"] else { return nil }
        guard chosen.count == 1, subprotocols.contains(chosen[0]) else {
            let names = ServerText.escaped(chosen.joined(separator: ", "), limit: 100)
            throw .handshake("the server chose the subprotocol '\(names)', which was not offered")
        }
        return chosen[0]
    }

    /// `text` without the spaces and tabs around it.
    private func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    /// Where the response head ends (the index just past CRLF CRLF) in `bytes`, or nil if not yet.
    package static func headEnd(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4)
        where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i + 4
        }
        return nil
    }
}
