import Foundation
import Testing

/// What the `mirror` most runs use loads: no Foundation beyond `FoundationEssentials` (so no ICU
/// and its data), and no PostgreSQL client with SwiftNIO and its TLS (`mirror-postgresql` has
/// those). Each is several MiB resident in every run.
@Suite("The mirror executable carries no Foundation, ICU or PostgreSQL client")
struct ExecutableFootprintTests {
    private static func contains(_ binary: URL, _ text: String) throws -> Bool {
        try Data(contentsOf: binary).range(of: Data(text.utf8)) != nil
    }

    @Test func mirrorNeedsFoundationEssentialsAloneAndTheHelperMore() throws {
        let mirror = MirrorProcess.executable
        // The dynamic section names each library a binary needs.
        #expect(try Self.contains(mirror, "libFoundationEssentials.so"))
        for library in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"] {
            #expect(try !Self.contains(mirror, library), "\(library)")
        }
        #expect(try Self.contains(SharedStateHandoverTests.helper, "libFoundation.so"))
    }

    @Test func mirrorLinksNoPostgreSQLClientAndTheHelperDoes() throws {
        #expect(try !Self.contains(MirrorProcess.executable, "PostgresNIO"))
        #expect(try Self.contains(SharedStateHandoverTests.helper, "PostgresNIO"))
    }
}
