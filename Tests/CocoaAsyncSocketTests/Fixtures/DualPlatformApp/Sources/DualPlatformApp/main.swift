// A file as an iOS or macOS app writes it: only `import CocoaAsyncSocket`, which also brings Foundation and
// Dispatch there (and here). Built by DualPlatformPackageTests, not run.
import CocoaAsyncSocket

final class Client: NSObject, GCDAsyncSocketDelegate {
    let timeout: TimeInterval = 5

    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {
        NSLog("connected to %@:%d", host, Int(port))
        sock.write("ping\n".data(using: .utf8), withTimeout: timeout, tag: 1)
        sock.readData(to: GCDAsyncSocket.lfData(), withTimeout: timeout, tag: 2)
    }

    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {
        print(String(decoding: data, as: UTF8.self))
        sock.disconnect()
    }

    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: Error?) {
        if let err { NSLog("disconnected: %@", err.localizedDescription) }
    }
}

let client = Client()
let socket = GCDAsyncSocket(delegate: client, delegateQueue: DispatchQueue.main)
if CommandLine.arguments.count == 3, let port = UInt16(CommandLine.arguments[2]) {
    do {
        try socket.connect(toHost: CommandLine.arguments[1], onPort: port, withTimeout: client.timeout)
        dispatchMain()
    } catch {
        NSLog("cannot connect: %@", "\(error)")
    }
}
