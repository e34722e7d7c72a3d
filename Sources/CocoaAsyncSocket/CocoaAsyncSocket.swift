// The module Apple apps import: `import CocoaAsyncSocket` builds unchanged on Linux.
//
// On Apple platforms CocoaAsyncSocket is a framework whose umbrella header imports Foundation, and whose module
// exports what it imports, so a file that says only `import CocoaAsyncSocket` also sees Foundation (`NSObject`,
// `NSLog`, `Data`, `URL`, `TimeInterval`), Dispatch (`DispatchQueue`) and the C library (`sockaddr_in`,
// `sa_family_t`). This module gives the same three.
//
// Full Foundation, not FoundationEssentials, because the interface itself names types only full Foundation
// has: `NSMutableData` (the buffer reads), `NSMutableArray` (`lookupHost`), `NSString` (`getHost`), `NSError`
// (`init(_nsError:)`), and every delegate on Apple platforms is an `NSObject` (the delegate protocols refine
// `NSObjectProtocol`), so `class Client: NSObject, GCDAsyncSocketDelegate` must compile. LoopSocket already
// links Foundation for those names; re-exporting it adds no library and no code to a program, only names to
// the files that import this module. Glibc comes with Foundation, as Darwin does on Apple platforms.
@_exported import Dispatch
@_exported import Foundation
@_exported import LoopSocket
