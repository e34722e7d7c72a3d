// The Security framework calls a CocoaAsyncSocket app makes in its trust callback, in the spelling Linux
// accepts: Apple's, less the Core Foundation bridging (`as CFArray`, `as CFData`, `CFError?`), which Linux's
// Foundation does not have. A renamed or retyped function fails the build.
import Foundation
import LoopSocket

/// Trusting an app's own CA, as CocoaMQTT's `trustedServerCertificates` does.
func securityTrustSpelling(_ trust: SecTrust, der: Data) {
    let anchors: [SecCertificate] = [SecCertificateCreateWithData(nil, der)].compactMap { $0 }
    let _: (SecCertificate) -> Data = SecCertificateCopyData
    let _: OSStatus = SecTrustSetAnchorCertificates(trust, anchors)
    let _: OSStatus = SecTrustSetAnchorCertificatesOnly(trust, true)
    SecTrustSetAnchorCertificates(trust, anchors)  // the result may be ignored, as with an imported C function
    var error: TLSError?
    let _: Bool = SecTrustEvaluateWithError(trust, &error)
    let _: Bool = SecTrustEvaluateWithError(trust, nil)
    let _: Bool = SecTrustSetAnchorCertificatesOnly(trust, false) == errSecSuccess
}
