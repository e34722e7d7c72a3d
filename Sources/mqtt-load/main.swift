// mqtt-load: MQTT 3.1.1 publishers at QoS 1 against a broker, built on loadtest's LoadProtocol API (see
// docs/loadtest.md). Every loadtest option applies, and its own (MQTTPublish.options: --topic, --payload)
// anywhere on the command line: `mqtt-load --port 1883 --connections 100 --rate 20k --payload 256`.
import LoadTest

LoadTestTool.main(MQTTPublish())
