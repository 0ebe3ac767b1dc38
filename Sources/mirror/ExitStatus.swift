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

    static func of(_ error: ImgurError) -> Int32 {
        switch error.kind {
        case .malformedResponse: dataError
        case .status, .unreachable: unavailable
        case .rateLimited: tryLater
        }
    }
}

extension ExitStatus {
    /// Prints `message` as one line on standard error and returns the exit to throw.
    static func fail(_ message: String, status: Int32) -> ExitCode {
        Console.printError("mirror: \(message)")
        return ExitCode(status)
    }
}
