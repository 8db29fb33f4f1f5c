// swift-tools-version:6.0
// Builds swift-openapi-generator's command-line tool for `Scripts/generate-api`. Not part of the product's build: the
// generated server code is committed (the generator builds cold in nearly four minutes, which every CI run would pay
// through the build plugin).
import PackageDescription

let package = Package(
    name: "openapi-generator-tool",
    dependencies: [.package(url: "https://github.com/apple/swift-openapi-generator", exact: "1.14.3")],
    targets: []
)
