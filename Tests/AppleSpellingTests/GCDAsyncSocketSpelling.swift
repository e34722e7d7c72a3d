// Every declaration of the Swift interface an iOS or macOS app compiles against for CocoaAsyncSocket's
// GCDAsyncSocket.h (Swift 6.3.1's ClangImporter, CocoaAsyncSocket 7.6.5), in that spelling, one line each and
// in the interface's order: a renamed or retyped symbol fails the build. Function references are typed, so a
// parameter that became non-optional, a label or a pointer type that changed does not slip through an
// implicit conversion. Apple-only declarations (NetService, CFStream, SSLContext, iOS backgrounding) are
// listed, commented, where they would be; docs/migrating-from-gcdasyncsocket.md says what to use instead.
// The one import is an app's: `CocoaAsyncSocket` brings Foundation, Dispatch and the C library with it.
import CocoaAsyncSocket

/// The constants and the error type.
func gcdAsyncSocketConstantsAndError() {
    let _: String = GCDAsyncSocketException
    let _: String = GCDAsyncSocketErrorDomain
    let _: String = GCDAsyncSocketQueueName
    let _: String = GCDAsyncSocketThreadName
    let _: String = GCDAsyncSocketManuallyEvaluateTrust
    let _: String = GCDAsyncSocketUseCFStreamForTLS
    let _: String = GCDAsyncSocketSSLPeerID
    let _: String = GCDAsyncSocketSSLProtocolVersionMin
    let _: String = GCDAsyncSocketSSLProtocolVersionMax
    let _: String = GCDAsyncSocketSSLSessionOptionFalseStart
    let _: String = GCDAsyncSocketSSLSessionOptionSendOneByteRecord
    let _: String = GCDAsyncSocketSSLCipherSuites
    let _: String = GCDAsyncSocketSSLALPN
    let _: String = GCDAsyncSocketSSLDiffieHellmanParameters
    let _: Int32 = GCDAsyncSocketLoggingContext
    // Apple: `CustomNSError, Hashable, Error`. Here the `CustomNSError` members without the conformance, which
    // would move failed system calls out of `NSPOSIXErrorDomain` when bridged (see GCDAsyncSocketError+NSError).
    let _: any (Hashable & Error) = GCDAsyncSocketError(.closedError)
    let _: Int = GCDAsyncSocketError(.closedError).errorCode
    let _: [String: Any] = GCDAsyncSocketError(.closedError).errorUserInfo
    let _: (NSError) -> GCDAsyncSocketError = GCDAsyncSocketError.init(_nsError:)
    let _: String = GCDAsyncSocketError.errorDomain
    let _: Int = GCDAsyncSocketError.Code.closedError.rawValue
    let _: any (Sendable & Equatable) = GCDAsyncSocketError.Code.noError
    let _: GCDAsyncSocketError.Code = .noError
    let _: GCDAsyncSocketError.Code = .badConfigError
    let _: GCDAsyncSocketError.Code = .badParamError
    let _: GCDAsyncSocketError.Code = .connectTimeoutError
    let _: GCDAsyncSocketError.Code = .readTimeoutError
    let _: GCDAsyncSocketError.Code = .writeTimeoutError
    let _: GCDAsyncSocketError.Code = .readMaxedOutError
    let _: GCDAsyncSocketError.Code = .closedError
    let _: GCDAsyncSocketError.Code = .otherError
    let _: GCDAsyncSocketError.Code = GCDAsyncSocketError.noError
    let _: GCDAsyncSocketError.Code = GCDAsyncSocketError.badConfigError
    let _: GCDAsyncSocketError.Code = GCDAsyncSocketError.badParamError
    let _: GCDAsyncSocketError.Code = GCDAsyncSocketError.connectTimeoutError
    let _: GCDAsyncSocketError.Code = GCDAsyncSocketError.readTimeoutError
    let _: GCDAsyncSocketError.Code = GCDAsyncSocketError.writeTimeoutError
    let _: GCDAsyncSocketError.Code = GCDAsyncSocketError.readMaxedOutError
    let _: GCDAsyncSocketError.Code = GCDAsyncSocketError.closedError
    let _: GCDAsyncSocketError.Code = GCDAsyncSocketError.otherError
    // What every imported error struct also has: the code, the user info, `catch Type.code`.
    let _: GCDAsyncSocketError.Code = GCDAsyncSocketError(.otherError, userInfo: [NSLocalizedDescriptionKey: "x"]).code
    let _: [String: Any] = GCDAsyncSocketError(.otherError).userInfo
    do { throw GCDAsyncSocketError(.closedError) } catch GCDAsyncSocketError.closedError {} catch {}
}

/// The initialisers.
func gcdAsyncSocketInitialisers(_ delegate: any GCDAsyncSocketDelegate, _ queue: DispatchQueue, _ fd: Int32) throws {
    let _: GCDAsyncSocket = GCDAsyncSocket()
    let _: GCDAsyncSocket = GCDAsyncSocket(socketQueue: queue)
    let _: GCDAsyncSocket = GCDAsyncSocket(delegate: delegate, delegateQueue: queue)
    let _: GCDAsyncSocket = GCDAsyncSocket(delegate: delegate, delegateQueue: queue, socketQueue: queue)
    let _: GCDAsyncSocket = try GCDAsyncSocket(fromConnectedSocketFD: fd, socketQueue: queue)
    let _: GCDAsyncSocket = try GCDAsyncSocket(fromConnectedSocketFD: fd, delegate: delegate, delegateQueue: queue)
    let _: GCDAsyncSocket = try GCDAsyncSocket(fromConnectedSocketFD: fd, delegate: delegate, delegateQueue: queue, socketQueue: queue)
}

/// The instance members.
func gcdAsyncSocketMembers(_ sock: GCDAsyncSocket, _ delegate: any GCDAsyncSocketDelegate, _ queue: DispatchQueue, _ url: URL, _ address: Data) throws {
    sock.delegate = delegate; let _: (any GCDAsyncSocketDelegate)? = sock.delegate
    sock.delegateQueue = queue; let _: DispatchQueue? = sock.delegateQueue
    var delegateOut: (any GCDAsyncSocketDelegate)?; var queueOut: DispatchQueue?; sock.getDelegate(&delegateOut, delegateQueue: &queueOut)
    let _: ((any GCDAsyncSocketDelegate)?, DispatchQueue?) -> Void = sock.setDelegate(_:delegateQueue:)
    let _: ((any GCDAsyncSocketDelegate)?) -> Void = sock.synchronouslySetDelegate(_:)
    let _: (DispatchQueue?) -> Void = sock.synchronouslySetDelegateQueue(_:)
    let _: ((any GCDAsyncSocketDelegate)?, DispatchQueue?) -> Void = sock.synchronouslySetDelegate(_:delegateQueue:)
    sock.isIPv4Enabled = true; let _: Bool = sock.isIPv4Enabled
    sock.isIPv6Enabled = true; let _: Bool = sock.isIPv6Enabled
    sock.isIPv4PreferredOverIPv6 = true; let _: Bool = sock.isIPv4PreferredOverIPv6
    sock.alternateAddressDelay = 0.3; let _: TimeInterval = sock.alternateAddressDelay
    sock.userData = nil; let _: Any? = sock.userData
    let _: (UInt16) throws -> Void = sock.accept(onPort:)
    let _: (String?, UInt16) throws -> Void = sock.accept(onInterface:port:)
    let _: (URL) throws -> Void = sock.accept(on:)
    let _: (String, UInt16) throws -> Void = sock.connect(toHost:onPort:)
    let _: (String, UInt16, TimeInterval) throws -> Void = sock.connect(toHost:onPort:withTimeout:)
    let _: (String, UInt16, String?, TimeInterval) throws -> Void = sock.connect(toHost:onPort:viaInterface:withTimeout:)
    let _: (Data) throws -> Void = sock.connect(toAddress:)
    let _: (Data, TimeInterval) throws -> Void = sock.connect(toAddress:withTimeout:)
    let _: (Data, String?, TimeInterval) throws -> Void = sock.connect(toAddress:viaInterface:withTimeout:)
    let _: (URL, TimeInterval) throws -> Void = sock.connect(to:withTimeout:)
    // Apple only: connect(to netService: NetService) throws
    let _: () -> Void = sock.disconnect
    let _: () -> Void = sock.disconnectAfterReading
    let _: () -> Void = sock.disconnectAfterWriting
    let _: () -> Void = sock.disconnectAfterReadingAndWriting
    let _: Bool = sock.isDisconnected
    let _: Bool = sock.isConnected
    let _: String? = sock.connectedHost
    let _: UInt16 = sock.connectedPort
    let _: URL? = sock.connectedUrl
    let _: String? = sock.localHost
    let _: UInt16 = sock.localPort
    let _: Data? = sock.connectedAddress
    let _: Data? = sock.localAddress
    let _: Bool = sock.isIPv4
    let _: Bool = sock.isIPv6
    let _: Bool = sock.isSecure
    let _: (TimeInterval, Int) -> Void = sock.readData(withTimeout:tag:)
    let _: (TimeInterval, NSMutableData?, UInt, Int) -> Void = sock.readData(withTimeout:buffer:bufferOffset:tag:)
    let _: (TimeInterval, NSMutableData?, UInt, UInt, Int) -> Void = sock.readData(withTimeout:buffer:bufferOffset:maxLength:tag:)
    let _: (UInt, TimeInterval, Int) -> Void = sock.readData(toLength:withTimeout:tag:)
    let _: (UInt, TimeInterval, NSMutableData?, UInt, Int) -> Void = sock.readData(toLength:withTimeout:buffer:bufferOffset:tag:)
    let _: (Data?, TimeInterval, Int) -> Void = sock.readData(to:withTimeout:tag:)
    let _: (Data, TimeInterval, NSMutableData?, UInt, Int) -> Void = sock.readData(to:withTimeout:buffer:bufferOffset:tag:)
    let _: (Data, TimeInterval, UInt, Int) -> Void = sock.readData(to:withTimeout:maxLength:tag:)
    let _: (Data, TimeInterval, NSMutableData?, UInt, UInt, Int) -> Void = sock.readData(to:withTimeout:buffer:bufferOffset:maxLength:tag:)
    let _: (UnsafeMutablePointer<Int>?, UnsafeMutablePointer<UInt>?, UnsafeMutablePointer<UInt>?) -> Float = sock.progress(ofReadReturningTag:bytesDone:total:)
    let _: (Data?, TimeInterval, Int) -> Void = sock.write(_:withTimeout:tag:)
    let _: (UnsafeMutablePointer<Int>?, UnsafeMutablePointer<UInt>?, UnsafeMutablePointer<UInt>?) -> Float = sock.progress(ofWriteReturningTag:bytesDone:total:)
    let settings: [String: NSObject]? = [kCFStreamSSLPeerName as String: NSString(string: "example.com")]; sock.startTLS(settings)
    sock.autoDisconnectOnClosedReadStream = true; let _: Bool = sock.autoDisconnectOnClosedReadStream
    let _: (DispatchQueue) -> Void = sock.markQueueTargetQueue(_:)
    let _: (DispatchQueue) -> Void = sock.unmarkSocketQueueTargetQueue(_:)
    let _: (@escaping () -> Void) -> Void = sock.perform(_:)
    let _: () -> Int32 = sock.socketFD
    let _: () -> Int32 = sock.socket4FD
    let _: () -> Int32 = sock.socket6FD
    // iOS only: readStream() -> Unmanaged<CFReadStream>?, writeStream() -> Unmanaged<CFWriteStream>?,
    // enableBackgroundingOnSocket() -> Bool. Apple only: sslContext() -> Unmanaged<SSLContext>?
    let _: (String, UInt16) throws -> NSMutableArray = GCDAsyncSocket.lookupHost(_:port:)
    let _: (Data) -> String? = GCDAsyncSocket.host(fromAddress:)
    let _: (Data) -> UInt16 = GCDAsyncSocket.port(fromAddress:)
    let _: (Data) -> Bool = GCDAsyncSocket.isIPv4Address(_:)
    let _: (Data) -> Bool = GCDAsyncSocket.isIPv6Address(_:)
    let _: (AutoreleasingUnsafeMutablePointer<NSString?>?, UnsafeMutablePointer<UInt16>?, Data) -> Bool = GCDAsyncSocket.getHost(_:port:fromAddress:)
    let _: (AutoreleasingUnsafeMutablePointer<NSString?>?, UnsafeMutablePointer<UInt16>?, UnsafeMutablePointer<sa_family_t>?, Data) -> Bool = GCDAsyncSocket.getHost(_:port:family:fromAddress:)
    let _: () -> Data = GCDAsyncSocket.crlfData
    let _: () -> Data = GCDAsyncSocket.crData
    let _: () -> Data = GCDAsyncSocket.lfData
    let _: () -> Data = GCDAsyncSocket.zeroData
    // Calls as apps write them (optionals, out-pointers, nil), beside the typed references above.
    let text = "hello"
    sock.write(text.data(using: .utf8), withTimeout: -1, tag: 0)
    sock.readData(to: "\r\n".data(using: .utf8), withTimeout: -1, tag: 0)
    var host: NSString?; var port: UInt16 = 0; var family: sa_family_t = 0
    _ = GCDAsyncSocket.getHost(&host, port: &port, family: &family, fromAddress: address)
    _ = GCDAsyncSocket.getHost(nil, port: &port, fromAddress: address)
    var tag = 0; var done: UInt = 0; var total: UInt = 0
    _ = sock.progress(ofReadReturningTag: &tag, bytesDone: &done, total: &total)
    _ = sock.progress(ofWriteReturningTag: nil, bytesDone: nil, total: nil)
    try sock.accept(on: url)
    try sock.connect(to: url, withTimeout: -1)
}

/// A delegate implementing every requirement, with the interface's exact signatures (`SecTrust` included).
final class EveryCallbackDelegate: NSObject, GCDAsyncSocketDelegate {
    func newSocketQueueForConnection(fromAddress address: Data, on sock: GCDAsyncSocket) -> DispatchQueue? { nil }
    func socket(_ sock: GCDAsyncSocket, didAcceptNewSocket newSocket: GCDAsyncSocket) {}
    func socket(_ sock: GCDAsyncSocket, didConnectToHost host: String, port: UInt16) {}
    func socket(_ sock: GCDAsyncSocket, didConnectTo url: URL) {}
    func socket(_ sock: GCDAsyncSocket, didRead data: Data, withTag tag: Int) {}
    func socket(_ sock: GCDAsyncSocket, didReadPartialDataOfLength partialLength: UInt, tag: Int) {}
    func socket(_ sock: GCDAsyncSocket, didWriteDataWithTag tag: Int) {}
    func socket(_ sock: GCDAsyncSocket, didWritePartialDataOfLength partialLength: UInt, tag: Int) {}
    func socket(_ sock: GCDAsyncSocket, shouldTimeoutReadWithTag tag: Int, elapsed: TimeInterval, bytesDone length: UInt) -> TimeInterval { 0 }
    func socket(_ sock: GCDAsyncSocket, shouldTimeoutWriteWithTag tag: Int, elapsed: TimeInterval, bytesDone length: UInt) -> TimeInterval { 0 }
    func socketDidCloseReadStream(_ sock: GCDAsyncSocket) {}
    func socketDidDisconnect(_ sock: GCDAsyncSocket, withError err: (any Error)?) {}
    func socketDidSecure(_ sock: GCDAsyncSocket) {}
    func socket(_ sock: GCDAsyncSocket, didReceive trust: SecTrust, completionHandler: @escaping @Sendable (Bool) -> Void) { completionHandler(false) }
}

/// The `async` form of the trust requirement, which Apple's importer makes of the completion-handler one
/// (a delegate implements one or the other).
final class AsyncTrustDelegate: NSObject, GCDAsyncSocketDelegate {
    func socket(_ sock: GCDAsyncSocket, didReceive trust: SecTrust) async -> Bool { trust.isTrusted }
}
