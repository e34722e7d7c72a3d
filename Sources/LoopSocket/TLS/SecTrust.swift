/// The Apple spelling of the peer's certificate chain in the manual trust callback:
/// `socket(_:didReceive:completionHandler:)` and its `async` form. Linux has no Security framework, so
/// `SecTrust` is ``TLSTrust``: code written against CocoaAsyncSocket's delegate compiles unchanged, and what it
/// did with `SecTrustEvaluateWithError` it does with ``TLSTrust/evaluate()`` or ``TLSTrust/isTrusted``.
public typealias SecTrust = TLSTrust

/// The Apple spelling of a TLS identity (certificate chain and private key), as `kCFStreamSSLCertificates`
/// takes it. Linux has no keychain or `SecPKCS12Import`: a ``TLSIdentity`` is loaded from PEM files
/// or from PKCS#12 data (``TLSIdentity/init(pkcs12:password:)``).
public typealias SecIdentity = TLSIdentity

/// Apple's pointer to an autoreleased Objective-C object, as CocoaAsyncSocket's out-parameters import
/// (`getHost(_:port:fromAddress:)`, `getDelegate(_:delegateQueue:)`, the UDP receive filter's context).
/// Linux has no autorelease pool: it is an `UnsafeMutablePointer`, and `&variable` passes one, as on Apple.
public typealias AutoreleasingUnsafeMutablePointer<Pointee> = UnsafeMutablePointer<Pointee>
