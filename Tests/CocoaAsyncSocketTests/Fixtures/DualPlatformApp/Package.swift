// swift-tools-version:6.0
// One app, two socket libraries: CocoaAsyncSocket on Apple platforms, this package's `CocoaAsyncSocket`
// product on Linux. Its sources say `import CocoaAsyncSocket` on both.
//
// The choice is made in the manifest, which SwiftPM compiles for the machine that builds: two conditional
// dependencies (`.product(…, condition: .when(platforms: [.linux]))`) cannot do it, because SwiftPM requires
// target names to be unique across the whole package graph, platform conditions or not, and both packages
// have a target named CocoaAsyncSocket.
import PackageDescription

#if os(Linux)
// In an app: `.package(url: "<this package's repository URL>", from: "<version>")`. Here: the package under
// test, which the test links next to this directory as ../EpollLoop (the identity a URL ending in
// EpollLoop.git gets).
let socketPackage: Package.Dependency = .package(path: "../EpollLoop")
let socketLibrary: Target.Dependency = .product(name: "CocoaAsyncSocket", package: "EpollLoop")
#else
let socketPackage: Package.Dependency = .package(url: "https://github.com/robbiehanson/CocoaAsyncSocket", from: "7.6.5")
let socketLibrary: Target.Dependency = .product(name: "CocoaAsyncSocket", package: "CocoaAsyncSocket")
#endif

let package = Package(
    name: "DualPlatformApp",
    dependencies: [socketPackage],
    targets: [
        .executableTarget(name: "DualPlatformApp", dependencies: [socketLibrary]),
    ]
)
