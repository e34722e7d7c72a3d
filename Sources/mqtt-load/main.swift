// mqtt-load: MQTT 3.1.1 publishers at QoS 1 against a broker, built on loadtest's LoadProtocol API (see
// docs/loadtest.md). Every loadtest option applies: `mqtt-load --port 1883 --connections 100 --rate 20k`.
// Its own: --topic PREFIX (default loadtest; each connection publishes to PREFIX/N) and --payload BYTES
// (default 64), given before the others.
import Glibc
import LoadTest

/// Prints `message` to standard error and exits with status 2 (loadtest's "could not start").
func fail(_ message: String) -> Never {
    let line = "mqtt-load: \(message)\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

var proto = MQTTPublish()
var arguments = Array(CommandLine.arguments.dropFirst())
while let flag = arguments.first, flag == "--topic" || flag == "--payload" {
    guard arguments.count >= 2 else {
        fail("\(flag) needs a value")
    }
    if flag == "--topic" {
        proto.topic = arguments[1]
    } else {
        guard let bytes = Int(arguments[1]), (0...(1 << 20)).contains(bytes) else {
            fail("--payload takes 0 to 1048576 bytes, not '\(arguments[1])'")
        }
        proto.payload = bytes
    }
    arguments.removeFirst(2)
}
LoadTestTool.main(proto, arguments: arguments)
