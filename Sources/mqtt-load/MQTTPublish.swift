import LoadTest

/// MQTT 3.1.1 publishers: each connection sends CONNECT (clean session, no keep-alive, its own client id) and
/// waits for a CONNACK that accepts it; each request is then a PUBLISH at QoS 1 to `topic/<connection>` with
/// `payload` bytes, and its reply the PUBACK carrying the same packet identifier
/// (<https://docs.oasis-open.org/mqtt/mqtt/v3.1.1/os/mqtt-v3.1.1-os.html>, sections 3.1, 3.2, 3.3, 3.4).
struct MQTTPublish: LoadProtocol {
    /// The topic prefix; each connection publishes to its own subtopic.
    var topic = "loadtest"
    /// Bytes of application message per PUBLISH.
    var payload = 64

    var name: String { "mqtt" }

    static var options: [LoadProtocolOption<Self>] {
        [
            LoadProtocolOption("--topic", value: "PREFIX",
                               help: "connection N publishes to PREFIX/N (default loadtest)") { proto, text in
                guard !text.isEmpty, !text.contains("#"), !text.contains("+") else {
                    throw OptionValueError("a topic name without wildcards (# +), not '\(text)'")
                }
                proto.topic = text
            },
            LoadProtocolOption("--payload", value: "BYTES",
                               help: "application message bytes per PUBLISH, 0 to 1048576 (default 64)") {
                proto, text in
                guard let bytes = Int(text), (0...(1 << 20)).contains(bytes) else {
                    throw OptionValueError("takes 0 to 1048576 bytes, not '\(text)'")
                }
                proto.payload = bytes
            },
        ]
    }

    func greeting(connection: Int) -> [UInt8]? {
        let clientID = Array("loadtest-\(connection)".utf8)
        var variable: [UInt8] = [0, 4] + Array("MQTT".utf8) + [4, 0x02, 0, 0]  // level 4, clean session, no keep-alive
        variable += Self.string(clientID)
        return [0x10] + Self.remainingLength(variable.count) + variable
    }

    func frameGreetingReply(_ input: UnsafeRawBufferPointer) -> ReplyFraming {
        guard input.count >= 4 else { return .needMore }
        guard input[0] == 0x20, input[1] == 2 else { return .malformed("not a CONNACK: byte \(input[0])") }
        return input[3] == 0 ? .reply(length: 4) : .errorReply(length: 4, "CONNACK return code \(input[3])")
    }

    func request(sequence: UInt64, connection: Int, into bytes: inout [UInt8]) {
        let topicName = Array("\(topic)/\(connection)".utf8)
        let id = Self.packetID(sequence)
        let length = 2 + topicName.count + 2 + payload
        bytes.append(0x32)  // PUBLISH, QoS 1, no DUP, no RETAIN
        bytes += Self.remainingLength(length)
        bytes += Self.string(topicName)
        bytes += [UInt8(id >> 8), UInt8(id & 0xff)]
        bytes += repeatElement(UInt8(ascii: "x"), count: payload)
    }

    func frameReply(_ input: UnsafeRawBufferPointer, sequence: UInt64) -> ReplyFraming {
        guard input.count >= 4 else { return .needMore }
        guard input[0] == 0x40, input[1] == 2 else { return .malformed("not a PUBACK: byte \(input[0])") }
        let id = UInt16(input[2]) << 8 | UInt16(input[3])
        guard id == Self.packetID(sequence) else {
            return .malformed("PUBACK for packet \(id), expected \(Self.packetID(sequence))")
        }
        return .reply(length: 4)
    }

    /// Packet identifiers run 1...65535 (0 is not one).
    static func packetID(_ sequence: UInt64) -> UInt16 { UInt16(sequence % 65_535) + 1 }

    /// A UTF-8 string: its length in two bytes, then the bytes.
    static func string(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xff)] + bytes }

    /// The fixed header's Remaining Length: 7 bits a byte, low first, the top bit saying more follow.
    static func remainingLength(_ value: Int) -> [UInt8] {
        var value = value
        var bytes: [UInt8] = []
        repeat {
            var byte = UInt8(value & 0x7f)
            value >>= 7
            if value > 0 { byte |= 0x80 }
            bytes.append(byte)
        } while value > 0
        return bytes
    }
}

/// What is wrong with an option's value, as `mqtt-load` says it.
struct OptionValueError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
