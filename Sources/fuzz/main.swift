import FuzzTargets
#if canImport(Glibc)
import Glibc
#endif

// `fuzz`: the fuzz targets (Sources/FuzzTargets) as one executable.
//
// Built normally, it replays inputs: `fuzz TARGET FILE-OR-DIRECTORY...` runs each file through the target and
// says which fail (exit 1), `fuzz --list` names the targets. Built with `-sanitize=fuzzer` and `-DFUZZING`
// (scripts/fuzz.sh), it is a libFuzzer binary: `fuzz --target NAME [libFuzzer flags] [CORPUS...]`.
//
// SwiftPM links an executable's top-level code as `main`, so libFuzzer's own `main` is never called: this code
// starts libFuzzer's driver itself (`LLVMFuzzerRunDriver`, looked up at run time: the build links with
// `--export-dynamic`), with the arguments that are not ours.

/// Writes `text` to standard error.
func printError(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

#if FUZZING
/// The target the driver calls, set once before the driver starts.
nonisolated(unsafe) var selected: FuzzTarget?

/// libFuzzer's entry point for one input: a property that fails aborts, so the input is saved as a crash.
@_cdecl("LLVMFuzzerTestOneInput")
func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    do {
        try selected!.run(UnsafeRawBufferPointer(start: data, count: size))
    } catch {
        printError("fuzz: property failed in \(selected!.name): \(error.description)\n")
        abort()
    }
    return 0
}

typealias Callback = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
typealias Driver = @convention(c) (
    UnsafeMutablePointer<CInt>, UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>, Callback
) -> CInt

var arguments = CommandLine.arguments
if arguments.contains("--list") {
    for target in FuzzTarget.all { print("\(target.name) \(target.maxLength)") }
    exit(0)
}
var name = getenv("FUZZ_TARGET").map { String(cString: $0) }
if let flag = arguments.firstIndex(of: "--target"), flag + 1 < arguments.count {
    name = arguments[flag + 1]
    arguments.removeSubrange(flag...flag + 1)
}
guard let name, let target = FuzzTarget.named(name) else {
    printError("usage: fuzz --target NAME [libFuzzer flags] [CORPUS...]; targets: "
          + FuzzTarget.all.map(\.name).joined(separator: ", ") + "\n")
    exit(2)
}
selected = target
// Whatever a target sets up once (OpenSSL's providers for PKCS#12) is set up before the first timed input.
_ = try? target.run(UnsafeRawBufferPointer(start: nil, count: 0))
guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "LLVMFuzzerRunDriver") else {
    printError("fuzz: LLVMFuzzerRunDriver not found: build with -sanitize=fuzzer and -Xlinker --export-dynamic\n")
    exit(2)
}
var argc = CInt(arguments.count)
var cStrings: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
exit(cStrings.withUnsafeMutableBufferPointer { buffer in
    var argv = buffer.baseAddress!
    return unsafeBitCast(symbol, to: Driver.self)(&argc, &argv, fuzzOneInput)
})
#else
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "--list" {
    for target in FuzzTarget.all { print("\(target.name)\t\(target.summary)") }
    exit(0)
}
guard arguments.count >= 2, let target = FuzzTarget.named(arguments[0]) else {
    printError("usage: fuzz TARGET FILE-OR-DIRECTORY...  (fuzz --list: the targets)\n")
    exit(2)
}
let files = FuzzReplay.files(in: Array(arguments.dropFirst()))
var failures = 0
for file in files {
    if let failure = FuzzReplay.replay(file, through: target) {
        failures += 1
        print("FAIL \(file): \(failure)")
    }
}
print("\(target.name): \(files.count) inputs, \(failures) failed")
exit(failures == 0 ? 0 : 1)
#endif
