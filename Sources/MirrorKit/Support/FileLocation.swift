import FoundationEssentials

/// A file by its folder's descriptor and its name: where a download writes.
struct FileLocation: Sendable {
    /// The folder, held open; nil for a location given by path, whose folder is opened (links
    /// in its path followed, as for any path a caller names) when the file is.
    let directory: Directory?
    let folderPath: String
    let name: String

    init(directory: Directory, name: String) {
        self.directory = directory
        folderPath = directory.path
        self.name = name
    }

    /// The file at `path`.
    init(path: String) {
        let slash = path.lastIndex(of: "/")
        folderPath = slash.map { String(path[..<$0]) } ?? "."
        name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        directory = nil
    }

    var path: String { (folderPath.isEmpty ? "" : folderPath) + "/" + name }

    /// The folder, opened now when the location was given by path.
    func folder() throws(FileSystemError) -> Directory {
        if let directory { return directory }
        return try Directory.open(existing: folderPath.isEmpty ? "/" : folderPath)
    }
}
