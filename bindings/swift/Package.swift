// swift-tools-version:5.9
// Vouch for iOS: a thin Swift API (Sources/Vouch) over the C ABI of include/vouch.h, shipped as the
// VouchFFI XCFramework that build-xcframework.sh builds (static libvouch.a for device and
// simulator, the header and its module map). Not compiled on Vouch's build machines: see README.md.
import PackageDescription

let package = Package(
    name: "Vouch",
    platforms: [.iOS(.v13), .macOS(.v11)],
    products: [
        .library(name: "Vouch", targets: ["Vouch"]),
    ],
    targets: [
        .binaryTarget(name: "VouchFFI", path: "VouchFFI.xcframework"),
        .target(
            name: "Vouch",
            dependencies: ["VouchFFI"],
            linkerSettings: [.linkedLibrary("c++")]  // openh264 (feature "h264") is C++
        ),
        .testTarget(
            name: "VouchTests",
            dependencies: ["Vouch"]
        ),
    ]
)
