import FixtureServer

extension FixtureServer {
    /// Serves tag `slow`: one image of `size` bytes sent at `bytesPerSecond`, whose thumbnail
    /// answers 500. A run of it lasts about size / rate seconds, with an error early on, and costs
    /// the in-process server (and so the other suites) little. Returns the image's id.
    @discardableResult
    func addSlowTag(size: Int = 8 << 20, bytesPerSecond: Int = 2 << 20) -> String {
        addGeneratedTag("slow", pages: 1, perPage: 1, albumEvery: 0, imageSize: size)
        let id = generatedImageIDs("slow")[0]
        inject(.throttle(bytesPerSecond: bytesPerSecond), path: "/\(id).jpg")
        inject(.respond(status: 500), path: "/\(id)m.jpg")
        return id
    }
}
