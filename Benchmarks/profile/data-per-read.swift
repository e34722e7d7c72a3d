// The user-space cost of the `Data` that CocoaAsyncSocket's API hands over per read, alone: what
// data-per-read.sh counts. One iteration is one echo round trip's worth of `Data`: the read's bytes copied
// into a new `Data` (what the delegate's `didRead` receives), its bytes read once to send them back
// (`withUnsafeBytes`, as the write path does), then the `Data` released.
import FoundationEssentials

/// Keeps the optimizer from dropping the bytes' read; never prints in a run.
@inline(never) func consume(_ base: UnsafeRawPointer?, _ count: Int) {
    if count < 0 { print(base as Any) }
}

@inline(never) func oneRead(_ bytes: UnsafeRawPointer, _ count: Int) {
    let data = Data(bytes: bytes, count: count)
    data.withUnsafeBytes { consume($0.baseAddress, $0.count) }
}

let iterations = Int(CommandLine.arguments[1]) ?? 0
let size = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 64 : 64
let bytes = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
bytes.initializeMemory(as: UInt8.self, repeating: 0x5a, count: size)
for _ in 0..<iterations { oneRead(bytes, size) }
