// Every declaration of the Swift interface an iOS or macOS app compiles against for CocoaAsyncSocket's
// GCDAsyncUdpSocket.h, in that spelling, one line each and in the interface's order (see
// GCDAsyncSocketSpelling.swift for how the lines are written).
import CocoaAsyncSocket

/// The constants, the error type and the filter block types.
func gcdAsyncUdpSocketConstantsAndError() {
    let _: String = GCDAsyncUdpSocketException
    let _: String = GCDAsyncUdpSocketErrorDomain
    let _: String = GCDAsyncUdpSocketQueueName
    let _: String = GCDAsyncUdpSocketThreadName
    let _: any (CustomNSError & Hashable & Error) = GCDAsyncUdpSocketError(.closedError)
    let _: (NSError) -> GCDAsyncUdpSocketError = GCDAsyncUdpSocketError.init(_nsError:)
    let _: String = GCDAsyncUdpSocketError.errorDomain
    let _: Int = GCDAsyncUdpSocketError.Code.closedError.rawValue
    let _: any (Sendable & Equatable) = GCDAsyncUdpSocketError.Code.noError
    let _: GCDAsyncUdpSocketError.Code = .noError
    let _: GCDAsyncUdpSocketError.Code = .badConfigError
    let _: GCDAsyncUdpSocketError.Code = .badParamError
    let _: GCDAsyncUdpSocketError.Code = .sendTimeoutError
    let _: GCDAsyncUdpSocketError.Code = .closedError
    let _: GCDAsyncUdpSocketError.Code = .otherError
    let _: GCDAsyncUdpSocketError.Code = GCDAsyncUdpSocketError.noError
    let _: GCDAsyncUdpSocketError.Code = GCDAsyncUdpSocketError.badConfigError
    let _: GCDAsyncUdpSocketError.Code = GCDAsyncUdpSocketError.badParamError
    let _: GCDAsyncUdpSocketError.Code = GCDAsyncUdpSocketError.sendTimeoutError
    let _: GCDAsyncUdpSocketError.Code = GCDAsyncUdpSocketError.closedError
    let _: GCDAsyncUdpSocketError.Code = GCDAsyncUdpSocketError.otherError
    let _: GCDAsyncUdpSocketError.Code = GCDAsyncUdpSocketError(.otherError, userInfo: [NSLocalizedDescriptionKey: "x"]).code
    let _: [String: Any] = GCDAsyncUdpSocketError(.otherError).userInfo
    do { throw GCDAsyncUdpSocketError(.closedError) } catch GCDAsyncUdpSocketError.closedError {} catch {}
    let _: GCDAsyncUdpSocketReceiveFilterBlock = { (_: Data, _: Data, _: AutoreleasingUnsafeMutablePointer<AnyObject?>) -> Bool in true }
    let _: GCDAsyncUdpSocketSendFilterBlock = { (_: Data, _: Data, _: Int) -> Bool in true }
}

/// A delegate implementing every requirement, with the interface's exact signatures.
final class EveryUdpCallbackDelegate: NSObject, GCDAsyncUdpSocketDelegate {
    func udpSocket(_ sock: GCDAsyncUdpSocket, didConnectToAddress address: Data) {}
    func udpSocket(_ sock: GCDAsyncUdpSocket, didNotConnect error: (any Error)?) {}
    func udpSocket(_ sock: GCDAsyncUdpSocket, didSendDataWithTag tag: Int) {}
    func udpSocket(_ sock: GCDAsyncUdpSocket, didNotSendDataWithTag tag: Int, dueToError error: (any Error)?) {}
    func udpSocket(_ sock: GCDAsyncUdpSocket, didReceive data: Data, fromAddress address: Data, withFilterContext filterContext: Any?) {}
    func udpSocketDidClose(_ sock: GCDAsyncUdpSocket, withError error: (any Error)?) {}
}

/// The initialisers and the instance and class members.
func gcdAsyncUdpSocketMembers(_ sock: GCDAsyncUdpSocket, _ delegate: any GCDAsyncUdpSocketDelegate, _ queue: DispatchQueue, _ address: Data) throws {
    let _: GCDAsyncUdpSocket = GCDAsyncUdpSocket()
    let _: GCDAsyncUdpSocket = GCDAsyncUdpSocket(socketQueue: queue)
    let _: GCDAsyncUdpSocket = GCDAsyncUdpSocket(delegate: delegate, delegateQueue: queue)
    let _: GCDAsyncUdpSocket = GCDAsyncUdpSocket(delegate: delegate, delegateQueue: queue, socketQueue: queue)
    let _: () -> (any GCDAsyncUdpSocketDelegate)? = sock.delegate
    let _: ((any GCDAsyncUdpSocketDelegate)?) -> Void = sock.setDelegate(_:)
    let _: ((any GCDAsyncUdpSocketDelegate)?) -> Void = sock.synchronouslySetDelegate(_:)
    let _: () -> DispatchQueue? = sock.delegateQueue
    let _: (DispatchQueue?) -> Void = sock.setDelegateQueue(_:)
    let _: (DispatchQueue?) -> Void = sock.synchronouslySetDelegateQueue(_:)
    var delegateOut: (any GCDAsyncUdpSocketDelegate)?; var queueOut: DispatchQueue?; sock.getDelegate(&delegateOut, delegateQueue: &queueOut)
    let _: ((any GCDAsyncUdpSocketDelegate)?, DispatchQueue?) -> Void = sock.setDelegate(_:delegateQueue:)
    let _: ((any GCDAsyncUdpSocketDelegate)?, DispatchQueue?) -> Void = sock.synchronouslySetDelegate(_:delegateQueue:)
    let _: () -> Bool = sock.isIPv4Enabled
    let _: (Bool) -> Void = sock.setIPv4Enabled(_:)
    let _: () -> Bool = sock.isIPv6Enabled
    let _: (Bool) -> Void = sock.setIPv6Enabled(_:)
    let _: () -> Bool = sock.isIPv4Preferred
    let _: () -> Bool = sock.isIPv6Preferred
    let _: () -> Bool = sock.isIPVersionNeutral
    let _: () -> Void = sock.setPreferIPv4
    let _: () -> Void = sock.setPreferIPv6
    let _: () -> Void = sock.setIPVersionNeutral
    let _: () -> UInt16 = sock.maxReceiveIPv4BufferSize
    let _: (UInt16) -> Void = sock.setMaxReceiveIPv4BufferSize(_:)
    let _: () -> UInt32 = sock.maxReceiveIPv6BufferSize
    let _: (UInt32) -> Void = sock.setMaxReceiveIPv6BufferSize(_:)
    let _: () -> UInt16 = sock.maxSendBufferSize
    let _: (UInt16) -> Void = sock.setMaxSendBufferSize(_:)
    let _: () -> Any? = sock.userData
    let _: (Any?) -> Void = sock.setUserData(_:)
    let _: () -> Data? = sock.localAddress
    let _: () -> String? = sock.localHost
    let _: () -> UInt16 = sock.localPort
    let _: () -> Data? = sock.localAddress_IPv4
    let _: () -> String? = sock.localHost_IPv4
    let _: () -> UInt16 = sock.localPort_IPv4
    let _: () -> Data? = sock.localAddress_IPv6
    let _: () -> String? = sock.localHost_IPv6
    let _: () -> UInt16 = sock.localPort_IPv6
    let _: () -> Data? = sock.connectedAddress
    let _: () -> String? = sock.connectedHost
    let _: () -> UInt16 = sock.connectedPort
    let _: () -> Bool = sock.isConnected
    let _: () -> Bool = sock.isClosed
    let _: () -> Bool = sock.isIPv4
    let _: () -> Bool = sock.isIPv6
    let _: (UInt16) throws -> Void = sock.bind(toPort:)
    let _: (UInt16, String?) throws -> Void = sock.bind(toPort:interface:)
    let _: (Data) throws -> Void = sock.bind(toAddress:)
    let _: (String, UInt16) throws -> Void = sock.connect(toHost:onPort:)
    let _: (Data) throws -> Void = sock.connect(toAddress:)
    let _: (String) throws -> Void = sock.joinMulticastGroup(_:)
    let _: (String, String?) throws -> Void = sock.joinMulticastGroup(_:onInterface:)
    let _: (String) throws -> Void = sock.leaveMulticastGroup(_:)
    let _: (String, String?) throws -> Void = sock.leaveMulticastGroup(_:onInterface:)
    let _: (String) throws -> Void = sock.sendIPv4Multicast(onInterface:)
    let _: (String) throws -> Void = sock.sendIPv6Multicast(onInterface:)
    let _: (Bool) throws -> Void = sock.enableReusePort(_:)
    let _: (Bool) throws -> Void = sock.enableBroadcast(_:)
    let _: (Data, TimeInterval, Int) -> Void = sock.send(_:withTimeout:tag:)
    let _: (Data, String, UInt16, TimeInterval, Int) -> Void = sock.send(_:toHost:port:withTimeout:tag:)
    let _: (Data, Data, TimeInterval, Int) -> Void = sock.send(_:toAddress:withTimeout:tag:)
    let _: (GCDAsyncUdpSocketSendFilterBlock?, DispatchQueue?) -> Void = sock.setSendFilter(_:with:)
    let _: (GCDAsyncUdpSocketSendFilterBlock?, DispatchQueue?, Bool) -> Void = sock.setSendFilter(_:with:isAsynchronous:)
    let _: () throws -> Void = sock.receiveOnce
    let _: () throws -> Void = sock.beginReceiving
    let _: () -> Void = sock.pauseReceiving
    let _: (GCDAsyncUdpSocketReceiveFilterBlock?, DispatchQueue?) -> Void = sock.setReceiveFilter(_:with:)
    let _: (GCDAsyncUdpSocketReceiveFilterBlock?, DispatchQueue?, Bool) -> Void = sock.setReceiveFilter(_:with:isAsynchronous:)
    let _: () -> Void = sock.close
    let _: () -> Void = sock.closeAfterSending
    let _: (DispatchQueue) -> Void = sock.markQueueTargetQueue(_:)
    let _: (DispatchQueue) -> Void = sock.unmarkSocketQueueTargetQueue(_:)
    let _: (@escaping () -> Void) -> Void = sock.perform(_:)
    let _: () -> Int32 = sock.socketFD
    let _: () -> Int32 = sock.socket4FD
    let _: () -> Int32 = sock.socket6FD
    // iOS only: readStream() -> Unmanaged<CFReadStream>?, writeStream() -> Unmanaged<CFWriteStream>?
    let _: (Data) -> String? = GCDAsyncUdpSocket.host(fromAddress:)
    let _: (Data) -> UInt16 = GCDAsyncUdpSocket.port(fromAddress:)
    let _: (Data) -> Int32 = GCDAsyncUdpSocket.family(fromAddress:)
    let _: (Data) -> Bool = GCDAsyncUdpSocket.isIPv4Address(_:)
    let _: (Data) -> Bool = GCDAsyncUdpSocket.isIPv6Address(_:)
    let _: (AutoreleasingUnsafeMutablePointer<NSString?>?, UnsafeMutablePointer<UInt16>?, Data) -> Bool = GCDAsyncUdpSocket.getHost(_:port:fromAddress:)
    let _: (AutoreleasingUnsafeMutablePointer<NSString?>?, UnsafeMutablePointer<UInt16>?, UnsafeMutablePointer<Int32>?, Data) -> Bool = GCDAsyncUdpSocket.getHost(_:port:family:fromAddress:)
    // Calls as apps write them: a filter closure storing its context, out-pointers, nil.
    sock.setReceiveFilter({ _, _, context in context.pointee = NSString(string: "tagged"); return true }, with: queue)
    var host: NSString?; var port: UInt16 = 0
    _ = GCDAsyncUdpSocket.getHost(&host, port: &port, fromAddress: address)
    _ = GCDAsyncUdpSocket.getHost(nil, port: &port, family: nil, fromAddress: address)
}
