import ArgumentParser
import Foundation
import MirrorKit

/// Exit statuses, from sysexits.h where one fits, so cron wrappers can tell failures apart.
enum ExitStatus {
    static let someFilesFailed: Int32 = 1
    static let dataError: Int32 = 65
    static let noInput: Int32 = 66
    static let unavailable: Int32 = 69
    static let cannotCreate: Int32 = 73
    static let tryLater: Int32 = 75
    static let configuration: Int32 = 78

    static func of(_ error: MirrorError) -> Int32 {
        switch error {
        case .configuration, .clientIDFile: configuration
        case .unsafePath, .fileSystem, .stateDatabase: cannotCreate
        case .digest: unavailable
        case .locked: tryLater
        }
    }
}

extension ExitStatus {
    /// The status of a run of several sources, from theirs: a signal first, then what cannot be
    /// mended by waiting (the mirror, the config, bad data, a refusal), then failed files, then
    /// "try later", then success.
    static func worst(_ statuses: [Int32]) -> Int32 {
        func severity(_ status: Int32) -> Int {
            switch status {
            case 0: 0
            case tryLater: 1
            case someFilesFailed: 2
            case unavailable: 3
            case dataError: 4
            case noInput: 5
            case configuration: 6
            case cannotCreate: 7
            default: 8
            }
        }
        return statuses.max { severity($0) < severity($1) } ?? 0
    }

    /// Prints `message` as one line on standard error and returns the exit to throw.
    static func fail(_ message: String, status: Int32) -> ExitCode {
        Console.printError("mirror: \(message)")
        return ExitCode(status)
    }
}
