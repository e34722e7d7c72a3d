import FoundationEssentials

/// The Apple spelling of the peer's certificate chain in the manual trust callback:
/// `socket(_:didReceive:completionHandler:)` and its `async` form. Linux has no Security framework, so
/// `SecTrust` is ``TLSTrust``: code written against CocoaAsyncSocket's delegate compiles unchanged, and what it
/// did with `SecTrustEvaluateWithError` it does with the function of that name below (or ``TLSTrust/evaluate()``),
/// and `SecTrustSetAnchorCertificates` likewise.
public typealias SecTrust = TLSTrust

/// The Apple spelling of a TLS identity (certificate chain and private key), as `kCFStreamSSLCertificates`
/// takes it. Linux has no keychain or `SecPKCS12Import`: a ``TLSIdentity`` is loaded from PEM files
/// or from PKCS#12 data (``TLSIdentity/init(pkcs12:password:)``).
public typealias SecIdentity = TLSIdentity

/// Apple's pointer to an autoreleased Objective-C object, as CocoaAsyncSocket's out-parameters import
/// (`getHost(_:port:fromAddress:)`, `getDelegate(_:delegateQueue:)`, the UDP receive filter's context).
/// Linux has no autorelease pool: it is an `UnsafeMutablePointer`, and `&variable` passes one, as on Apple.
public typealias AutoreleasingUnsafeMutablePointer<Pointee> = UnsafeMutablePointer<Pointee>

/// The Apple spelling of a certificate: ``TLSCertificate``, as in `kCFStreamSSLCertificates` after the
/// identity, in ``TLSTrust/certificates`` and as a trust anchor.
public typealias SecCertificate = TLSCertificate

/// The Security framework's result code: `errSecSuccess` (0) or an error.
public typealias OSStatus = Int32

/// The Security framework's success code.
public let errSecSuccess: OSStatus = 0

/// A certificate from DER bytes, as the Security framework makes one; nil if they are not one. Linux has no
/// `CFAllocator` or `CFData`: pass `nil` and `Data` (`NSData` bridges with `as Data`).
public func SecCertificateCreateWithData(_ allocator: AnyObject?, _ data: Data) -> SecCertificate? {
    try? TLSCertificate(der: data)
}

/// The certificate's DER bytes (``TLSCertificate/derBytes``), as the Security framework copies them.
public func SecCertificateCopyData(_ certificate: SecCertificate) -> Data {
    certificate.derBytes
}

/// Sets the roots `trust` trusts (``TLSTrust/anchorCertificates``), and trusts only those until
/// `SecTrustSetAnchorCertificatesOnly(trust, false)`, as on Apple. Linux has no `CFArray`: pass the array
/// itself (`certificates`, not `certificates as CFArray`). Returns `errSecSuccess`.
@discardableResult
public func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: [SecCertificate]) -> OSStatus {
    trust.anchorCertificates = anchorCertificates
    return errSecSuccess
}

/// Whether the anchors are the only roots trusted (`true`) or come on top of the configuration's trust
/// roots, the system's store by default (`false`): ``TLSTrust/anchorCertificatesOnly``. Returns `errSecSuccess`.
@discardableResult
public func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus {
    trust.anchorCertificatesOnly = anchorCertificatesOnly
    return errSecSuccess
}

/// ``TLSTrust/evaluate()`` in the Security framework's spelling: true when the chain is trusted, else false
/// with the reason in `error` (a ``TLSError``, where Apple gives a `CFError`) when it is not nil.
@discardableResult
public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<TLSError?>?) -> Bool {
    let failure = trust.evaluate()
    error?.pointee = failure
    return failure == nil
}
