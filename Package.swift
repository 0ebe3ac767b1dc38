// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "mirror",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "MirrorKit", targets: ["MirrorKit"]),
        .executable(name: "mirror", targets: ["mirror"]),
        .executable(name: "mirror-postgresql", targets: ["mirror-postgresql"]),
        .executable(name: "fixture-server", targets: ["fixture-server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        .target(name: "CMirrorSystem"),
        .target(
            name: "MirrorKit",
            dependencies: [
                "CMirrorSystem",
                "CCurl",
                "CLibXML2",
                "COpenSSL",
                "CSQLite",
                "CZlib",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Subprocess", package: "swift-subprocess"),
            ]
        ),
        // PostgreSQL's client (with SwiftNIO, its TLS and Foundation) lives apart from MirrorKit,
        // linked only into `mirror-postgresql`, which `mirror` hands a run with a shared state to.
        .target(
            name: "MirrorPostgreSQL",
            dependencies: [
                "MirrorKit",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .target(
            name: "MirrorCommandLine",
            dependencies: [
                "MirrorKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(name: "mirror", dependencies: ["MirrorCommandLine"]),
        .executableTarget(name: "mirror-postgresql", dependencies: ["MirrorCommandLine", "MirrorPostgreSQL"]),
        .target(
            name: "FixtureServer",
            dependencies: [
                "COpenSSL",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "fixture-server",
            dependencies: [
                "FixtureServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "scheduler-bench",
            dependencies: ["MirrorKit", "FixtureServer"]
        ),
        .testTarget(
            name: "MirrorKitTests",
            dependencies: ["MirrorKit", "MirrorPostgreSQL", "FixtureServer"],
            resources: []
        ),
    ],
    swiftLanguageModes: [.v6]
)
